package shard

import (
	"runtime"
	"sync"
	"weak"
)

// AfterEachGC calls f with the object w points to after every GC, for as
// long as the object is alive, for an owner of idle sets that gives back
// what a GC found idle (see [Idle.TakeSpare]). f must not keep the object
// alive (a method expression, not a closure over it), must not call
// AfterEachGC, and runs on the runtime's finalizer goroutine, one owner
// after another, so it should be brief.
//
// Every registration runs from one finalizer, set on a sentinel object
// that is unreachable from the start and sets itself again each time it
// runs: after the first, a GC cycle costs the hooks no allocation, however
// many owners registered. A registration whose object was collected is
// dropped at the next cycle.
func AfterEachGC[T any](w weak.Pointer[T], f func(*T)) {
	hook := func() bool {
		p := w.Value()
		if p == nil {
			return false
		}
		f(p)
		return true
	}
	gcHooks.mu.Lock()
	gcHooks.fns = append(gcHooks.fns, hook)
	if !gcHooks.armed {
		gcHooks.armed = true
		runtime.SetFinalizer(new(gcSentinel), runGCHooks)
	}
	gcHooks.mu.Unlock()
}

// gcHooks is every AfterEachGC registration whose object was alive at the
// last cycle.
var gcHooks struct {
	mu    sync.Mutex
	fns   []func() bool // false once the hook's object is gone
	armed bool
}

// gcSentinel is the object whose finalizer runs the hooks: 16 bytes, so
// that it is not a tiny allocation, whose finalizer may never run.
type gcSentinel [16]byte

// runGCHooks runs every hook after a GC cycle, drops those whose object is
// gone, and sets itself again for the next cycle, which keeps s alive until
// then.
func runGCHooks(s *gcSentinel) {
	runtime.SetFinalizer(s, runGCHooks)
	gcHooks.mu.Lock()
	defer gcHooks.mu.Unlock()
	live := gcHooks.fns[:0]
	for _, hook := range gcHooks.fns {
		if hook() {
			live = append(live, hook)
		}
	}
	clear(gcHooks.fns[len(live):])
	gcHooks.fns = live
}
