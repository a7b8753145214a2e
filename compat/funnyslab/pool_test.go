package slab_test

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	slab "github.com/memkit/memkit/compat/funnyslab"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/sysmem"
	"github.com/memkit/memkit/stats"
)

// newPoolByName is how the gateways that import funny/slab pick a pool: by a
// configuration string.
func newPoolByName(kind string) slab.Pool {
	switch kind {
	case "sync":
		return slab.NewSyncPool(64, 64*1024, 2)
	case "atom":
		return slab.NewAtomPool(64, 64*1024, 2, 1024*1024)
	case "chan":
		return slab.NewChanPool(64, 64*1024, 2, 1024*1024)
	case "lock":
		return slab.NewLockPool(64, 64*1024, 2, 1024*1024)
	}
	return &slab.NoPool{}
}

var kinds = []string{"sync", "atom", "chan", "lock", "none"}

// TestPool_GatewayProgram is a gateway's use: goroutines Alloc a buffer per
// message, fill it, check it, Free it; no two live buffers may share bytes.
func TestPool_GatewayProgram(t *testing.T) {
	for _, kind := range kinds {
		t.Run("impl="+kind, func(t *testing.T) {
			pool := newPoolByName(kind)
			var wg sync.WaitGroup
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 300; i++ {
						size := 1 + (i*131+g*7)%(70*1024) // some above maxSize
						buf := pool.Alloc(size)
						if len(buf) != size {
							t.Errorf("Alloc(%d) has len %d", size, len(buf))
							return
						}
						b := byte(g*31 + i)
						for j := range buf {
							buf[j] = b
						}
						if bytes.Count(buf, []byte{b}) != size {
							t.Errorf("buffer of %d bytes changed under its owner", size)
							return
						}
						pool.Free(buf)
					}
				}()
			}
			wg.Wait()
		})
	}
}

func TestPool_ClassesForFactorAndSizes(t *testing.T) {
	pool := slab.NewAtomPool(64, 64*1024, 2, 1024*1024)
	for _, c := range []struct{ size, cap int }{{1, 64}, {64, 64}, {65, 128}, {1000, 1024}, {64 * 1024, 64 * 1024}, {64*1024 + 1, 64*1024 + 1}} {
		b := pool.Alloc(c.size)
		if len(b) != c.size || cap(b) != c.cap {
			t.Errorf("Alloc(%d): len %d cap %d; want cap %d", c.size, len(b), cap(b), c.cap)
		}
		pool.Free(b)
	}
}

func TestAtomPool_PagesThenMake(t *testing.T) {
	pool := slab.NewAtomPool(64, 1024, 2, 64*1024)
	var held [][]byte
	for i := 0; i < 400; i++ { // 400 KiB: past the 5 classes' 64 KiB pages
		b := pool.Alloc(1024)
		b[0], b[1023] = byte(i), byte(i)
		held = append(held, b)
	}
	for i, b := range held {
		if b[0] != byte(i) || b[1023] != byte(i) {
			t.Fatalf("buffer %d overlaps another", i)
		}
		pool.Free(b)
	}
	var st stats.Stats
	pool.Unwrap().ReadStats(&st)
	if st.HeapFallbacks == 0 || st.Allocs != 400 {
		t.Fatalf("a full page did not fall back to make: %+v", st)
	}
}

func TestAtomPool_FreeTwicePanics(t *testing.T) {
	pool := slab.NewAtomPool(64, 64*1024, 2, 1024*1024)
	keep := pool.Alloc(100)
	copy(keep, "intact")
	buf := pool.Alloc(100)
	pool.Free(buf)
	memtest.WantMisuse(t, "bytepool", "memkit/bytepool: double free", "Put", checked.DoubleFree, func() { pool.Free(buf) })
	if string(keep[:6]) != "intact" {
		t.Fatal("a live buffer changed")
	}
}

func TestNewPool_BadParametersPanic(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"min>max", func() { slab.NewAtomPool(1024, 64, 2, 1<<20) }, "memkit/funnyslab: NewAtomPool: maxSize 64 < minSize 1024"},
		{"factor", func() { slab.NewSyncPool(64, 1024, 1) }, "memkit/funnyslab: NewSyncPool: factor 1 must be at least 2"},
		{"page", func() { slab.NewChanPool(64, 1<<20, 2, 1024) }, "memkit/funnyslab: NewChanPool: pageSize 1024 must hold at least one chunk of maxSize 1048576"},
	} {
		t.Run(c.name, func(t *testing.T) { memtest.CheckPanic(t, c.want, c.f) })
	}
}

func TestPool_AllocFreeAllocatesNothing(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build records a stack per Alloc")
	}
	for _, kind := range kinds[:4] {
		t.Run("impl="+kind, func(t *testing.T) {
			pool := newPoolByName(kind)
			pool.Free(pool.Alloc(512))
			if n := testing.AllocsPerRun(1000, func() { pool.Free(pool.Alloc(512)) }); n != 0 {
				t.Fatalf("%v allocs per Alloc+Free", n)
			}
		})
	}
}

// BenchmarkPool_AllocAndFree is funny/slab's published benchmark, for
// benchstat -col /impl.
func BenchmarkPool_AllocAndFree(b *testing.B) {
	for _, size := range []int{128, 256, 512} {
		for _, kind := range kinds {
			b.Run(fmt.Sprintf("size=%d/impl=%s", size, strings.ToUpper(kind[:1])+kind[1:]), func(b *testing.B) {
				pool := newPoolByName(kind)
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						pool.Free(pool.Alloc(size))
					}
				})
			})
		}
	}
}

// TestPool_SizeTheMachineCannotServe: issue 21 case 1. Every pool's Alloc
// of more than the machine's memory ended the process with the runtime's
// fatal out-of-memory; now each panics with a memkit message, and a
// maxSize or pageSize past what the machine holds makes the constructor
// panic.
func TestPool_SizeTheMachineCannotServe(t *testing.T) {
	if math.MaxInt < 1<<46 || sysmem.Available(tib64) {
		t.Skip("needs a 64-bit system that refuses to map 64 TiB")
	}
	n := int(tib64)
	fromBytepool := fmt.Sprintf("memkit/bytepool: size %d is more than the machine can allocate now "+
		"(the runtime would end the process): bound sizes that come from outside before Get", n)
	for _, kind := range kinds {
		t.Run("impl="+kind, func(t *testing.T) {
			want := fromBytepool
			if kind == "none" {
				want = "memkit/funnyslab: Alloc of 70368744177664 bytes: more than the system can provide"
			}
			pool := newPoolByName(kind)
			memtest.CheckPanic(t, want, func() { pool.Alloc(n) })
			b := pool.Alloc(100) // still serves
			pool.Free(b)
		})
	}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"NewSyncPool maxSize 2^62", func() { slab.NewSyncPool(64, int(tib64<<16), 2) }},
		{"NewAtomPool pageSize 2^46", func() { slab.NewAtomPool(64, 1024, 2, n) }},
	} {
		if msg := memtest.PanicOf(c.f); !strings.HasPrefix(msg, "memkit/funnyslab: ") {
			t.Errorf("%s: panic %q; want a memkit/funnyslab: message", c.name, msg)
		}
	}
}

// tib64 is 64 TiB (a variable, so that 32-bit platforms compile int(tib64)).
var tib64 = uint64(1) << 46
