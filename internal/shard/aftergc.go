package shard

import (
	"runtime"
	"weak"
)

// AfterEachGC calls f with the object w points to on the runtime's cleanup
// goroutine after every GC, for as long as the object is alive, for an
// owner of idle sets that gives back what a GC found idle (see
// [Idle.TakeSpare]). f must not keep the object alive (a method
// expression, not a closure over it).
func AfterEachGC[T any](w weak.Pointer[T], f func(*T)) {
	runtime.AddCleanup(new(gcToken), afterGC[T], gcArg[T]{w, f})
}

// gcToken is an object whose only use is its cleanup, which runs after the
// GC that finds it unreachable: the one after AfterEachGC made it.
type gcToken struct{ _ *int } // a pointer, so that it is an object of its own (see Ticket)

// gcArg is what the cleanup of a gcToken needs.
type gcArg[T any] struct {
	w weak.Pointer[T]
	f func(*T)
}

// afterGC runs f and arms the next GC's call, unless the object is gone.
func afterGC[T any](a gcArg[T]) {
	p := a.w.Value()
	if p == nil {
		return
	}
	a.f(p)
	AfterEachGC(a.w, a.f)
}
