package shard

import (
	"runtime"
	"sync/atomic"
	"testing"
	"weak"
)

type gcCounter struct {
	n atomic.Int32
	_ [8]byte // not a tiny allocation, so that it is collected on its own
}

func (c *gcCounter) count() { c.n.Add(1) }

// gcsUntil runs GCs until done reports true, at most 100.
func gcsUntil(done func() bool) bool {
	for i := 0; i < 100 && !done(); i++ {
		runtime.GC()
		runtime.Gosched() // let the finalizer goroutine run
	}
	return done()
}

// hooks returns how many registrations AfterEachGC holds.
func hooks() int {
	gcHooks.mu.Lock()
	defer gcHooks.mu.Unlock()
	return len(gcHooks.fns)
}

// AfterEachGC calls its function after GCs, again and again, while the
// object lives, and drops it once the object is gone.
func TestAfterEachGC(t *testing.T) {
	c := &gcCounter{}
	AfterEachGC(weak.Make(c), (*gcCounter).count)
	if !gcsUntil(func() bool { return c.n.Load() >= 3 }) {
		t.Fatalf("called %d times after 100 GCs; want 3", c.n.Load())
	}
	runtime.KeepAlive(c)

	before := hooks()
	gone := &gcCounter{}
	AfterEachGC(weak.Make(gone), (*gcCounter).count)
	gone = nil
	if !gcsUntil(func() bool { return hooks() < before+1 }) {
		t.Fatalf("%d hooks after 100 GCs with one object collected; want %d", hooks(), before)
	}
}

// A GC cycle costs the hooks no allocation, however many owners
// registered.
func TestAfterEachGC_NoAllocationPerCycle(t *testing.T) {
	var owners [10]*gcCounter
	for i := range owners {
		owners[i] = &gcCounter{}
		AfterEachGC(weak.Make(owners[i]), (*gcCounter).count)
	}
	last := &owners[len(owners)-1].n
	allocs := testing.AllocsPerRun(20, func() {
		n := last.Load()
		gcsUntil(func() bool { return last.Load() > n })
	})
	if allocs >= 1 {
		t.Fatalf("%.1f allocations per GC cycle with %d hooks; want 0", allocs, len(owners))
	}
	runtime.KeepAlive(&owners)
}
