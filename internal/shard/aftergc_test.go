package shard

import (
	"runtime"
	"sync/atomic"
	"testing"
	"weak"
)

type gcCounter struct{ n atomic.Int32 }

func (c *gcCounter) count() { c.n.Add(1) }

// AfterEachGC calls its function after GCs, again and again, while the
// object lives, and not once it is gone.
func TestAfterEachGC(t *testing.T) {
	c := &gcCounter{}
	AfterEachGC(weak.Make(c), (*gcCounter).count)
	for i := 0; i < 100 && c.n.Load() < 3; i++ {
		runtime.GC()
		runtime.Gosched() // let the cleanup goroutine run
	}
	if n := c.n.Load(); n < 3 {
		t.Fatalf("called %d times after up to 100 GCs; want 3", n)
	}
	runtime.KeepAlive(c)
}
