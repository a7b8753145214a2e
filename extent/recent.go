package extent

import "unsafe"

// The front cache: the last ranges freed wait here, unmerged, until a
// Malloc of exactly the size of one takes it back without a descent of the
// index (see docs/extent.md, "The front cache").

// recentCap bounds the front cache: few enough that scanning it costs a
// few nanoseconds, enough for the allocations a loop frees and makes again.
const recentCap = 8

// span is a free range of a block in the front cache. ptr is its start as
// a pointer, from the slice Free was given, so that Malloc makes the slice
// back without looking up the block.
type span struct {
	ptr        unsafe.Pointer
	start, end uintptr
	blk        int32
}

// recentFit returns the front-cache entry of exactly n bytes to take back,
// or -1. An entry is taken only where first fit would go no lower, so that
// the cache changes no placement: when it lies below every range of the
// index (t.low, a lower bound of their starts, answers that without a
// descent in the common case), or below the index's first fit for n.
func (a *Allocator) recentFit(n int) int {
	for i := a.nRecent - 1; i >= 0; i-- {
		if r := &a.recent[i]; r.end-r.start == uintptr(n) {
			if r.start < a.t.low {
				return i
			}
			return a.recentFitSlow(i, n)
		}
	}
	return -1
}

// recentFitSlow is recentFit for entry i when t.low does not settle it: it
// makes t.low exact, then compares with the index's first fit.
func (a *Allocator) recentFitSlow(i, n int) int {
	t := &a.t
	t.low = t.lowest()
	start := a.recent[i].start
	if start < t.low {
		return i
	}
	if x := t.fit(uintptr(n)); x == 0 || start < t.nodes[x].start {
		return i
	}
	return -1
}

// takeRecent hands out the range of n bytes in front-cache entry i.
func (a *Allocator) takeRecent(i, n int) []byte {
	last := a.nRecent - 1
	ptr := a.recent[i].ptr
	if i != last {
		a.recent[i] = a.recent[last]
	}
	a.recent[last].ptr = nil
	a.nRecent = last
	a.gain = min(a.gain+8, 64)
	a.free -= uint64(n)
	a.allocs++
	a.noteUse()
	a.counted()
	return unsafe.Slice((*byte)(ptr), n)
}

// inRecent reports whether [p, e) overlaps a range of the front cache.
func (a *Allocator) inRecent(p, e uintptr) bool {
	for i := range a.nRecent {
		if r := &a.recent[i]; p < r.end && r.start < e {
			return true
		}
	}
	return false
}

// evict takes the oldest range out of a full front cache and returns it.
func (a *Allocator) evict() span {
	r := a.recent[0]
	copy(a.recent[:], a.recent[1:])
	a.nRecent--
	a.recent[a.nRecent].ptr = nil
	return r
}

// merge moves r, a range of the front cache, into the index.
func (a *Allocator) merge(r span) {
	a.free -= uint64(r.end - r.start) // freeRange counts it again
	a.freeRange(r.start, r.end, r.blk)
}

// flushRecent merges every range of the front cache into the index.
func (a *Allocator) flushRecent() {
	for i := range a.nRecent {
		a.merge(a.recent[i])
		a.recent[i].ptr = nil
	}
	a.nRecent = 0
}
