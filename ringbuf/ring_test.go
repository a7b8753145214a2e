package ringbuf_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/sysmem"
	"github.com/memkit/memkit/ringbuf"
	"github.com/memkit/memkit/slab"
)

func mustNew(t testing.TB, slots, size int, opts ...ringbuf.Option) *ringbuf.Ring {
	t.Helper()
	r, err := ringbuf.New(slots, size, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func readStats(r *ringbuf.Ring) memkit.Stats {
	var s memkit.Stats
	r.ReadStats(&s)
	return s
}

// starts are the first positions every behavioural test runs from: zero,
// and just before the 64-bit counters wrap around.
var starts = []uint64{0, math.MaxUint64 - 5}

func forEachStart(t *testing.T, f func(t *testing.T, opts ...ringbuf.Option)) {
	for _, s := range starts {
		t.Run(fmt.Sprintf("start=%d", s), func(t *testing.T) { f(t, ringbuf.WithStart(s)) })
	}
}

func TestNew_InvalidParamsNameTheParam(t *testing.T) {
	for _, tc := range []struct {
		slots, size int
		opts        []ringbuf.Option
		want        string
	}{
		{0, 64, nil, "memkit/ringbuf: slots 0 must be between 1 and 1073741824"},
		{1<<30 + 1, 64, nil, "memkit/ringbuf: slots 1073741825 must be between 1 and 1073741824"},
		{10, 0, nil, "memkit/ringbuf: slotSize 0 must be between 1 and 2147483647"},
		{10, 64, []ringbuf.Option{ringbuf.WithPolicy(9)}, "memkit/ringbuf: Policy 9 is not Reject, Overwrite or Block"},
		{10, 64, []ringbuf.Option{ringbuf.WithPolicy(ringbuf.Block), nil}, "memkit/ringbuf: option 2 of 2 is nil"},
		// More than the runtime can allocate in one piece: it used to panic
		// in makeslice.
		{1 << 30, 1 << 20, nil, "memkit/ringbuf: 1073741824 slots of 1048576 bytes need 1125917086711808 bytes, more than the system can allocate now; use fewer or smaller slots"},
	} {
		r, err := ringbuf.New(tc.slots, tc.size, tc.opts...)
		if r != nil || err == nil || err.Error() != tc.want {
			t.Errorf("New(%d, %d) = %v, %v; want nil, %q", tc.slots, tc.size, r, err, tc.want)
		}
	}
}

// A ring larger than the machine can hold is an error from New (issue 13
// case 6: New(1<<20, 1<<20), 1 TiB, ended the process with the runtime's
// fatal "out of memory").
func TestNew_MoreMemoryThanTheSystemHasIsAnError(t *testing.T) {
	if sysmem.Available(1<<40 + 1<<24) {
		t.Skip("the system would map 1 TiB here (overcommit_memory=1?)")
	}
	r, err := ringbuf.New(1<<20, 1<<20)
	const want = "memkit/ringbuf: 1048576 slots of 1048576 bytes need 1099528404992 bytes, more than the system can allocate now; use fewer or smaller slots"
	if r != nil || err == nil || err.Error() != want {
		t.Fatalf("New(1<<20, 1<<20) = %v, %v; want %s", r, err, want)
	}
	// With memory from elsewhere only the bookkeeping counts: 16 MiB.
	mem := make([]byte, 1<<20)
	if _, err := ringbuf.New(1<<20, 1, ringbuf.WithMemory(func(int) []byte { return mem })); err != nil {
		t.Fatalf("New with 1 MiB of slot memory: %v", err)
	}
}

// ReadStats may run on any goroutine while others write and read (a
// scraper of memkit.Publish): race-free, and each snapshot consistent.
func TestRing_ReadStatsWhileInUse(t *testing.T) {
	r := mustNew(t, 8, 16, ringbuf.WithPolicy(ringbuf.Overwrite))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := make([]byte, 16)
			for {
				select {
				case <-stop:
					return
				default:
				}
				r.Write(p[:5])
				r.Read(p)
				if g, ok := r.Peek(); ok {
					r.Release(g)
				}
			}
		}()
	}
	var s memkit.Stats
	for range 20000 {
		r.ReadStats(&s)
		if s.LiveObjects > 8 || s.Allocs-s.Frees != s.LiveObjects || s.InUseBytes != 16*s.LiveObjects ||
			len(s.Classes) != 1 || s.Classes[0].IdleObjects+s.LiveObjects != 8 {
			close(stop)
			wg.Wait()
			t.Fatalf("inconsistent snapshot %v", &s)
		}
	}
	close(stop)
	wg.Wait()
}

func TestRing_FIFO(t *testing.T) {
	forEachStart(t, func(t *testing.T, opts ...ringbuf.Option) {
		r := mustNew(t, 10, 16, opts...)
		p := make([]byte, 16)
		for round := range 5 {
			for i := range 10 {
				if err := r.Write(fmt.Appendf(nil, "r%d-%d", round, i)); err != nil {
					t.Fatal(err)
				}
			}
			if r.Len() != 10 {
				t.Fatalf("Len %d; want 10", r.Len())
			}
			for i := range 10 {
				n, ok := r.Read(p)
				if want := fmt.Sprintf("r%d-%d", round, i); !ok || string(p[:n]) != want {
					t.Fatalf("Read = %q, %v; want %q", p[:n], ok, want)
				}
			}
			if _, ok := r.Read(p); ok {
				t.Fatal("Read of an empty ring succeeded")
			}
		}
		if s := readStats(r); s.Allocs != 50 || s.Frees != 50 || s.LiveObjects != 0 || s.ReservedBytes != 16*16 {
			t.Fatalf("stats %v", &s)
		}
	})
}

func TestRing_RejectWhenFull(t *testing.T) {
	forEachStart(t, func(t *testing.T, opts ...ringbuf.Option) {
		r := mustNew(t, 3, 8, opts...)
		for i := range 3 {
			if err := r.Write([]byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Write([]byte{9}); !errors.Is(err, ringbuf.ErrFull) {
			t.Fatalf("Write to a full ring = %v; want ErrFull", err)
		}
		p := make([]byte, 8)
		if n, ok := r.Read(p); !ok || n != 1 || p[0] != 0 {
			t.Fatalf("the rejected write changed the ring: %v %v %v", n, ok, p[0])
		}
		if s := readStats(r); s.Failures != 1 || s.Allocs != 3 || s.LiveObjects != 2 {
			t.Fatalf("stats %v", &s)
		}
	})
}

func TestRing_OverwriteDropsOldestAndCountsIt(t *testing.T) {
	forEachStart(t, func(t *testing.T, opts ...ringbuf.Option) {
		r := mustNew(t, 10, 8, append(opts, ringbuf.WithPolicy(ringbuf.Overwrite))...)
		for i := range 25 {
			if err := r.Write([]byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if r.Dropped() != 15 {
			t.Fatalf("Dropped %d; want 15", r.Dropped())
		}
		p := make([]byte, 8)
		for i := 15; i < 25; i++ {
			if n, ok := r.Read(p); !ok || n != 1 || p[0] != byte(i) {
				t.Fatalf("Read = %d %v %d; want record %d", n, ok, p[0], i)
			}
		}
		if s := readStats(r); s.Allocs != 25 || s.Frees != 25 || s.LiveObjects != 0 || s.Failures != 0 {
			t.Fatalf("stats %v", &s)
		}
	})
}

func TestRing_BlockWaitsForSpaceOrContext(t *testing.T) {
	r := mustNew(t, 2, 8, ringbuf.WithPolicy(ringbuf.Block))
	r.Write([]byte{1})
	r.Write([]byte{2})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.WriteContext(ctx, []byte{3}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WriteContext to a full ring = %v; want DeadlineExceeded", err)
	}
	done := make(chan error)
	go func() { done <- r.Write([]byte{3}) }()
	p := make([]byte, 8)
	if n, ok := r.Read(p); !ok || n != 1 || p[0] != 1 {
		t.Fatal("Read failed")
	}
	if err := <-done; err != nil {
		t.Fatalf("blocked Write = %v", err)
	}
	for _, want := range []byte{2, 3} {
		if n, err := r.ReadContext(context.Background(), p); err != nil || n != 1 || p[0] != want {
			t.Fatalf("ReadContext = %d %v %d; want %d", n, err, p[0], want)
		}
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if _, err := r.ReadContext(ctx2, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadContext of an empty ring = %v", err)
	}
	if s := readStats(r); s.Failures != 1 {
		t.Fatalf("Failures %d; want 1 (the expired WriteContext)", s.Failures)
	}
}

func TestRing_TooLargeIsAnErrorNotATruncation(t *testing.T) {
	r := mustNew(t, 4, 8)
	if err := r.Write(make([]byte, 9)); !errors.Is(err, ringbuf.ErrTooLarge) {
		t.Fatalf("Write of 9 bytes into 8-byte slots = %v; want ErrTooLarge", err)
	}
	if r.Len() != 0 {
		t.Fatal("the refused write changed the ring")
	}
	memtest.CheckPanic(t, "memkit/ringbuf: Read buffer shorter than a slot", func() { r.Read(make([]byte, 7)) })
}

func TestRing_LendAndReturn(t *testing.T) {
	forEachStart(t, func(t *testing.T, opts ...ringbuf.Option) {
		r := mustNew(t, 4, 16, opts...)
		for i := range 6 {
			s, err := r.Reserve(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Bytes()) != 16 {
				t.Fatalf("reserved slot of %d bytes", len(s.Bytes()))
			}
			n := copy(s.Bytes(), fmt.Sprintf("rec %d", i))
			r.Commit(s, n)
			wantMisuse(t, "memkit/ringbuf: Commit of a slot not reserved", "Commit", checked.DoubleFree, func() { r.Commit(s, n) })
			got, ok := r.Peek()
			if !ok || string(got.Bytes()) != fmt.Sprintf("rec %d", i) {
				t.Fatalf("Peek = %q, %v", got.Bytes(), ok)
			}
			r.Release(got)
			wantMisuse(t, "memkit/ringbuf: Release of a slot not peeked", "Release", checked.DoubleFree, func() { r.Release(got) })
		}
		wantMisuse(t, "memkit/ringbuf: Commit of a slot not reserved", "Commit", checked.ForeignFree, func() { r.Commit(ringbuf.Slot{}, 0) })
		wantMisuse(t, "memkit/ringbuf: Release of a slot not peeked", "Release", checked.ForeignFree, func() { r.Release(ringbuf.Slot{}) })
		s, _ := r.Reserve(context.Background())
		memtest.CheckPanic(t, "memkit/ringbuf: Commit length outside the slot", func() { r.Commit(s, 17) })
		memtest.CheckPanic(t, "memkit/ringbuf: Commit length outside the slot", func() { r.Commit(s, -1) })
		// Readers wait behind an uncommitted slot.
		if _, ok := r.Peek(); ok {
			t.Fatal("Peek returned a slot not yet committed")
		}
		r.Commit(s, 0)
		if got, ok := r.Peek(); !ok || len(got.Bytes()) != 0 {
			t.Fatal("empty record lost")
		} else {
			r.Release(got)
		}
	})
}

func TestRing_HotPathsDoNotAllocate(t *testing.T) {
	skipIfChecked(t, "it records every lend")
	r := mustNew(t, 10, 64)
	rec := make([]byte, 64)
	p := make([]byte, 64)
	ctx := context.Background()
	var st memkit.Stats
	r.ReadStats(&st)
	for name, f := range map[string]func(){
		"Write+Read": func() { r.Write(rec); r.Read(p) },
		"Reserve+Commit+Peek+Release": func() {
			s, _ := r.Reserve(ctx)
			r.Commit(s, copy(s.Bytes(), rec))
			g, _ := r.Peek()
			r.Release(g)
		},
		"ReadStats": func() { r.ReadStats(&st) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocs; want 0", name, n)
		}
	}
	tr, err := ringbuf.NewTyped[point](10)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { tr.Write(point{1, 2}); tr.Read() }); n != 0 {
		t.Errorf("Typed Write+Read: %v allocs; want 0", n)
	}
}

type point struct{ X, Y float64 }

func TestTyped(t *testing.T) {
	r, err := ringbuf.NewTyped[point](4)
	if err != nil {
		t.Fatal(err)
	}
	r.Write(point{1, 2})
	r.Write(point{3, 4})
	if p, ok := r.Read(); !ok || p != (point{1, 2}) {
		t.Fatalf("Read = %v %v", p, ok)
	}
	if p, ok := r.Read(); !ok || p != (point{3, 4}) {
		t.Fatalf("Read = %v %v", p, ok)
	}
	if _, ok := r.Read(); ok {
		t.Fatal("Read of an empty ring")
	}
	type named struct {
		ID   int
		Name string
	}
	if _, err := ringbuf.NewTyped[named](4); err == nil ||
		err.Error() != "memkit/ringbuf: named.Name is a string: Go pointers cannot live in ringbuf memory" {
		t.Fatalf("NewTyped of a pointerful type = %v", err)
	}
}

// TestRing_ManyWritersAndReaders runs writers and readers at once under
// every policy, from positions just before the counters wrap, and checks
// that every record read was written, whole, once, in each writer's order,
// and (except under Overwrite) that none is lost.
func TestRing_ManyWritersAndReaders(t *testing.T) {
	const writers, readers, perWriter = 4, 4, 3000
	for _, pol := range []ringbuf.Policy{ringbuf.Reject, ringbuf.Overwrite, ringbuf.Block} {
		for _, start := range starts {
			t.Run(fmt.Sprintf("policy=%v/start=%d", pol, start), func(t *testing.T) {
				r := mustNew(t, 10, 24, ringbuf.WithPolicy(pol), ringbuf.WithStart(start))
				var wg sync.WaitGroup
				var written [writers]int
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rec := make([]byte, 24)
						for i := 0; i < perWriter; {
							binary.LittleEndian.PutUint64(rec, uint64(w))
							binary.LittleEndian.PutUint64(rec[8:], uint64(i))
							binary.LittleEndian.PutUint64(rec[16:], uint64(w)^uint64(i)*0x9E3779B97F4A7C15)
							if err := r.Write(rec[:8+8+8-(i%3)*4]); err != nil {
								if !errors.Is(err, ringbuf.ErrFull) {
									t.Error(err)
									return
								}
								continue // retry
							}
							i++
						}
						written[w] = perWriter
					}()
				}
				var mu sync.Mutex
				got := 0
				stop := make(chan struct{})
				var rg sync.WaitGroup
				for range readers {
					rg.Add(1)
					go func() {
						defer rg.Done()
						p := make([]byte, 24)
						last := [writers]int{-1, -1, -1, -1}
						n := 0
						for {
							k, ok := r.Read(p)
							if !ok {
								select {
								case <-stop:
									if r.Len() == 0 {
										mu.Lock()
										got += n
										mu.Unlock()
										return
									}
								default:
								}
								continue
							}
							w := int(binary.LittleEndian.Uint64(p))
							i := int(binary.LittleEndian.Uint64(p[8:]))
							if w >= writers || k != 24-(i%3)*4 {
								t.Errorf("torn record: writer %d index %d length %d", w, i, k)
								return
							}
							if k >= 24 && binary.LittleEndian.Uint64(p[16:]) != uint64(w)^uint64(i)*0x9E3779B97F4A7C15 {
								t.Errorf("torn record from writer %d index %d", w, i)
								return
							}
							if i <= last[w] {
								t.Errorf("writer %d: record %d read after %d", w, i, last[w])
								return
							}
							last[w] = i
							n++
						}
					}()
				}
				wg.Wait()
				close(stop)
				rg.Wait()
				s := readStats(r)
				total := uint64(writers * perWriter)
				if pol == ringbuf.Overwrite {
					if uint64(got)+r.Dropped() != total {
						t.Fatalf("read %d + dropped %d != written %d", got, r.Dropped(), total)
					}
				} else if got != writers*perWriter {
					t.Fatalf("read %d records; want %d", got, total)
				}
				if s.Allocs != total || s.Frees != total || s.LiveObjects != 0 {
					t.Fatalf("stats %v", &s)
				}
			})
		}
	}
}

func TestRing_WithMemoryFromASlab(t *testing.T) {
	a, err := slab.NewArena(64, 64<<10, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	var chunk []byte
	r, err := ringbuf.New(10, 64, ringbuf.WithMemory(func(n int) []byte {
		chunk = a.Alloc(n)
		return chunk
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(chunk) != 16*64 {
		t.Fatalf("asked the slab for %d bytes; want 16 slots of 64", len(chunk))
	}
	r.Write([]byte("on slab memory"))
	s, _ := r.Peek()
	if !a.Owns(s.Bytes()) || string(s.Bytes()) != "on slab memory" {
		t.Fatal("the record is not in the slab chunk")
	}
	r.Release(s)
	if _, err := ringbuf.New(10, 64, ringbuf.WithMemory(func(n int) []byte { return make([]byte, n-1) })); err == nil ||
		err.Error() != "memkit/ringbuf: Memory returned 1023 bytes; 16 slots of 64 need 1024" {
		t.Fatalf("short memory: %v", err)
	}
}
