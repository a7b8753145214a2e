// Package budget is the byte budget every memkit allocator takes: a limit
// on the memory it holds, and a callback that fires when that memory crosses
// a threshold, for load shedding.
//
// Allocators charge a Budget on their slow paths only — when they obtain
// memory from the heap or the OS, or give it back — never per Get or Put, so
// the budget adds no shared counter to the hot path.
package budget

import "sync/atomic"

// Budget accounts the bytes an allocator holds. The zero value and a nil
// *Budget are unlimited and never call back. It is safe for concurrent use.
type Budget struct {
	limit    int64 // 0: none
	edge     Edge  // threshold 0: no callback
	deferred bool  // the callback waits for Notify (see Defer)
	used     atomic.Int64
}

// New returns a budget of limit bytes (0 for none) that calls fn with the
// bytes in use when they rise to threshold or more (above true) and when
// they fall back below it (above false). A threshold of 0 or a nil fn means
// no callback. fn runs on the goroutine that crossed the threshold, inside
// the allocator's slow path: it must be quick and must not call back into
// the allocator.
func New(limit, threshold int64, fn func(used int64, above bool)) *Budget {
	if fn == nil {
		threshold = 0
	}
	return &Budget{limit: limit, edge: Edge{threshold: threshold, fn: fn}}
}

// Limit returns the limit in bytes, 0 for none.
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// Used returns the bytes charged and not released.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// TryCharge charges n bytes if that keeps the total within the limit and
// reports whether it did; when it does not, nothing changes.
func (b *Budget) TryCharge(n int64) bool {
	if b == nil {
		return true
	}
	for {
		u := b.used.Load()
		if b.limit > 0 && u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			b.crossed()
			return true
		}
	}
}

// Charge charges n bytes whatever the limit: for memory the allocator must
// take, such as a heap fallback it counts.
func (b *Budget) Charge(n int64) {
	if b == nil {
		return
	}
	b.used.Add(n)
	b.crossed()
}

// Release gives n charged bytes back.
func (b *Budget) Release(n int64) {
	if b == nil {
		return
	}
	b.used.Add(-n)
	b.crossed()
}

// Defer makes the callback wait for [Budget.Notify]: charges and releases
// then only count, and the owner calls Notify once it holds no lock, so that
// the callback may call the owner's methods (ReadStats takes every shard's
// lock). Call it before the budget is used.
func (b *Budget) Defer() {
	if b != nil {
		b.deferred = true
	}
}

// Notify calls fn for each crossing of the threshold since the last call,
// as an undeferred budget does inside Charge and Release. A deferred
// budget's owner calls it after every call that may have charged or
// released, with no lock held; it costs a load or two when nothing
// crossed. The crossing may be reported on another goroutine than the one
// whose charge made it, if that one's Notify comes later.
func (b *Budget) Notify() {
	if b == nil || b.edge.threshold == 0 {
		return
	}
	for b.edge.Flip(b.used.Load()) {
	}
}

// crossed calls fn for each crossing of the threshold since the last
// call. It rereads the counter after each flip, so that when charges and
// releases race, the state the last of them leaves agrees with the bytes in
// use (a flip computed from a stale value is undone at once).
func (b *Budget) crossed() {
	if b.edge.threshold == 0 || b.deferred {
		return
	}
	for b.edge.Flip(b.used.Load()) {
	}
}

// Edge is the alert half of a budget, for allocators that keep the bytes
// in use themselves (a buddy region counts them on its own path, a ring
// derives them from its positions): it remembers which side of a threshold
// the figure was last reported on and calls fn when it crosses. The zero
// Edge never calls. It is safe for concurrent use.
type Edge struct {
	threshold int64
	fn        func(used int64, above bool)
	above     atomic.Bool
}

// NewEdge returns an edge that calls fn(used, true) when used rises to
// threshold or more and fn(used, false) when it falls back below.
func NewEdge(threshold int64, fn func(used int64, above bool)) Edge {
	return Edge{threshold: threshold, fn: fn}
}

// Flip compares used with the side last reported. If it is on the other
// side, Flip records the new side, calls fn (unless a concurrent Flip
// recorded it first) and returns true: the caller reloads its figure and
// calls Flip again, until it returns false, so that racing updates leave
// the reported side agreeing with the last figure —
//
//	for e.Flip(load()) {
//	}
//
// An owner used by one goroutine calls it once.
func (e *Edge) Flip(used int64) bool {
	if e.fn == nil {
		return false
	}
	above := used >= e.threshold
	if e.above.Load() == above {
		return false
	}
	if e.above.CompareAndSwap(!above, above) {
		e.fn(used, above)
	}
	return true
}
