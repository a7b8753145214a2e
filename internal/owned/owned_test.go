package owned_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/memkit/memkit/internal/owned"
)

func at(b []byte, i int) uintptr { return uintptr(unsafe.Pointer(&b[:cap(b)][i])) }

func TestOwner_RangesNestedAndRemoved(t *testing.T) {
	outer := make([]byte, 1<<20)
	inner := outer[4096:8192:8192]
	other := make([]byte, 100)
	owned.Add(outer, "outer", true)
	owned.Add(inner, "inner", true)
	defer owned.Remove(outer, "outer")
	for _, c := range []struct {
		p    uintptr
		want string
	}{
		{at(outer, 0), "outer"},
		{at(outer, 4095), "outer"},
		{at(outer, 4096), "inner"},
		{at(outer, 8191), "inner"},
		{at(outer, 8192), "outer"},
		{at(outer, 1<<20-1), "outer"},
		{at(other, 0), ""},
	} {
		if got := owned.Owner(c.p); got != c.want {
			t.Errorf("Owner(%#x) = %q; want %q", c.p, got, c.want)
		}
		if c.want != "" && !owned.Maybe(c.p) {
			t.Errorf("Maybe(%#x) = false for a byte of %s", c.p, c.want)
		}
	}
	owned.Remove(inner, "inner")
	if got := owned.Owner(at(outer, 5000)); got != "outer" {
		t.Errorf("after Remove(inner): Owner = %q; want outer", got)
	}
	runtime.KeepAlive(outer)
}

// A heap range is forgotten once the GC collects it, so the heap may reuse
// its addresses for memory nobody registered.
func TestAddHeap_ForgottenWhenCollected(t *testing.T) {
	p := func() uintptr {
		b := make([]byte, 64<<10)
		owned.Add(b, "gone", true)
		return uintptr(unsafe.Pointer(&b[100]))
	}()
	for range 10 {
		runtime.GC()
	}
	if got := owned.Owner(p); got != "" {
		t.Fatalf("Owner of a collected range = %q", got)
	}
}

func TestMaybe_FalseWithNothingRegisteredNearby(t *testing.T) {
	var x [16]byte
	if p := uintptr(unsafe.Pointer(&x)); owned.Maybe(p) && owned.Owner(p) != "" {
		t.Fatal("a stack array is registered")
	}
}

func TestMaybe_Inlines(t *testing.T) {
	b := make([]byte, 16)
	if testing.AllocsPerRun(100, func() { owned.Maybe(uintptr(unsafe.Pointer(&b[0]))) }) != 0 {
		t.Fatal("Maybe allocates")
	}
}

// BenchmarkOwner_Miss is what an Elastic Put pays for a buffer above a
// registered heap range: MustBeUnowned (Maybe, then Owner only if the
// buffer's granule is marked), and Owner alone.
func BenchmarkOwner_Miss(b *testing.B) {
	for _, ranges := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("ranges=%d", ranges), func(b *testing.B) {
			// Ranges at every other 128 KiB of one slice, the probe in a
			// granule of its own above them all.
			big := make([]byte, (2*ranges+2)<<16)
			mems := make([][]byte, ranges)
			for i := range mems {
				mems[i] = big[2*i<<16 : (2*i+1)<<16 : (2*i+1)<<16]
				owned.Add(mems[i], "bench", false)
			}
			p := uintptr(unsafe.Pointer(&big[(2*ranges+1)<<16]))
			if !owned.Maybe(p) && owned.Owner(p) != "" {
				b.Fatal("the probe is registered")
			}
			b.ReportAllocs()
			b.Run("call=Owner", func(b *testing.B) {
				for b.Loop() {
					owned.Owner(p)
				}
			})
			b.Run("call=MustBeUnowned", func(b *testing.B) {
				for b.Loop() {
					owned.MustBeUnowned("bench", p)
				}
			})
			for _, m := range mems {
				owned.Remove(m, "bench")
			}
			runtime.KeepAlive(big)
		})
	}
}

// Ranges come and go while readers look up one that stays: the readers
// always find it, and never a removed one's owner (run with -race).
func TestOwner_ConcurrentChanges(t *testing.T) {
	stay := make([]byte, 64<<10)
	owned.Add(stay, "stay", true)
	defer owned.Remove(stay, "stay")
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-done:
					return
				default:
				}
				p := at(stay, k%len(stay))
				if !owned.Maybe(p) {
					t.Error("Maybe missed a registered range")
					return
				}
				if got := owned.Owner(p); got != "stay" {
					t.Errorf("Owner = %q; want stay", got)
					return
				}
			}
		}()
	}
	churn := make([][]byte, 8)
	for i := range churn {
		churn[i] = make([]byte, 4096)
	}
	for k := range 2000 {
		m := churn[k%len(churn)]
		owned.Add(m, "churn", false)
		owned.Remove(m, "churn")
	}
	close(done)
	wg.Wait()
	for _, m := range churn {
		if got := owned.Owner(at(m, 0)); got != "" {
			t.Fatalf("a removed range is still %q's", got)
		}
	}
}

// Add and Remove of a mapping allocate nothing once the tables have grown,
// as offheap's Alloc+Free promises.
func TestAddRemove_AllocatesNothing(t *testing.T) {
	m := make([]byte, 4096)
	owned.Add(m, "warm", false)
	owned.Remove(m, "warm")
	if a := testing.AllocsPerRun(100, func() {
		owned.Add(m, "m", false)
		owned.Remove(m, "m")
	}); a != 0 {
		t.Fatalf("%v allocs per Add+Remove", a)
	}
}
