package buddy

import (
	"math/bits"
	"sync/atomic"

	"github.com/memkit/memkit/internal/snapshot"
	"github.com/memkit/memkit/stats"
)

// The statistics an Allocator shows other goroutines. The owner keeps its
// counters in plain fields, which only it may read, and copies an order's
// row into atomics that any goroutine may read at every publishEvery-th
// Alloc and Free of that order; every row at every slow-path event (a
// failed Alloc, the merge of every free pair, a bad free, Close), at the
// first checkEvery-th Alloc or Free of an order after a reader asked for
// fresh figures, and at PublishStats. So Alloc and Free pay a mask test,
// and the readers never touch the owner's state.

// publishEvery is how often, in Allocs (and in Frees) of an order, the
// owner publishes that order's row: a power of two.
const publishEvery = 64

// orderRow is the published copy of an order's counters. The owner stores
// allocs before frees and a reader loads frees before allocs, so a row
// never shows more frees than allocations.
type orderRow struct {
	allocs, frees, nfree atomic.Uint64
}

// published is the allocator-wide part of what ReadStats reads.
type published struct {
	seq      snapshot.Seq // a reader's request, answered by each publication
	nonEmpty atomic.Uint64
	failures atomic.Uint64
	badFrees atomic.Uint64
	closed   atomic.Bool
}

// checkEvery is how often, in Allocs (and in Frees) of an order, the owner
// looks whether a reader asked for fresh figures: a power of two dividing
// publishEvery, so that the hot paths test one mask.
const checkEvery = 16

// maybePublish runs after the Alloc or Free of order k that made its
// counter c a multiple of checkEvery: it publishes every row if a reader
// asked for fresh figures, order k's row if c is a multiple of
// publishEvery. Only the owner calls it. Out of line: the hot paths only
// test the mask.
//
//go:noinline
func (a *Allocator) maybePublish(k int, c uint64) {
	switch {
	case a.pub.seq.Asked():
		a.publishAll()
	case c%publishEvery == 0:
		a.publishRow(k)
		a.publishGlobals()
	}
}

func (a *Allocator) publishRow(k int) {
	o := &a.orders[k]
	o.pub.allocs.Store(o.allocs)
	o.pub.frees.Store(o.frees)
	o.pub.nfree.Store(uint64(o.nfree))
}

// publishGlobals publishes the allocator-wide figures after the rows:
// rows are read one field at a time, so the sequence lock only marks the
// publication for readers waiting for one.
func (a *Allocator) publishGlobals() {
	p := &a.pub
	p.seq.BeginWrite()
	p.nonEmpty.Store(a.nonEmpty)
	p.failures.Store(a.failures)
	p.badFrees.Store(a.badFrees)
	p.closed.Store(a.closed)
	p.seq.EndWrite()
}

// publishAll publishes every row and the allocator-wide figures.
func (a *Allocator) publishAll() {
	for k := range a.orders {
		a.publishRow(k)
	}
	a.publishGlobals()
}

// countBadFree counts a bad free and publishes it, before the caller panics.
func (a *Allocator) countBadFree() {
	a.badFrees++
	a.publishGlobals()
}

// PublishStats makes every later [Allocator.ReadStats], on any goroutine,
// see the allocator's exact figures as of now. Only the goroutine that
// uses the allocator may call it, between its calls: where figures should
// be current, such as after a batch or in a test. It costs three atomic
// stores per order and does not allocate.
func (a *Allocator) PublishStats() { a.publishAll() }

// ReadStats fills *s with the figures the owner last published (see
// [Allocator.PublishStats]) and a row per order, smallest first. It is
// safe to call from any goroutine while the owner uses the allocator, such
// as the scraper of [github.com/memkit/memkit.Publish]: it only reads
// published atomics, each field a value it held at some moment, and a row
// never shows more frees than allocations. The owner publishes an order's
// row at every 64th Alloc and every 64th Free of that order, every row at
// a failed Alloc (after merging every free pair), a bad free and Close, at
// the next 16th Alloc or Free of an order after a ReadStats asked for
// fresh figures (ReadStats waits a few scheduler yields for that and
// otherwise returns what is published), and at PublishStats. So Failures,
// BadFrees and Releases are always current; the per-order counts lag the
// owner by at most 63 Allocs and 63 Frees per order, and IdleObjects and
// LargestFree by the splits and merges since the order was last
// published; PublishStats makes them exact.
//
// A row's Size is the block size, LiveObjects the blocks handed out,
// IdleObjects the free blocks of that order, ReservedBytes both together.
// InUseBytes counts blocks at their rounded size, and FreeBytes is the rest
// of the region. LargestFree is the block size of the largest order with a
// free block: free buddies kept apart by lazy merging (see the package
// documentation) count as two blocks until an Alloc that needs them merged
// merges them, so [stats.Stats.Fragmentation] may overstate how scattered
// the free memory is by up to those pairs. Grows is 1 (the region),
// Releases 1 once closed, when FreeBytes and LargestFree are 0. It costs
// O(orders) and does not allocate once s.Classes has room for every order.
func (a *Allocator) ReadStats(s *stats.Stats) {
	a.pub.seq.Settle()
	s.Reset()
	s.Classes = a.AppendClassStats(s.Classes)
	for _, c := range s.Classes {
		s.Allocs += c.Allocs
		s.Frees += c.Frees
		s.InUseBytes += c.InUseBytes
	}
	s.LiveObjects = s.Allocs - s.Frees
	s.Failures = a.pub.failures.Load()
	s.BadFrees = a.pub.badFrees.Load()
	s.Grows = 1
	if !a.pub.closed.Load() {
		s.ReservedBytes = uint64(a.size)
		s.FreeBytes = s.ReservedBytes - min(s.InUseBytes, s.ReservedBytes)
		if ne := a.pub.nonEmpty.Load(); ne != 0 {
			s.LargestFree = min(uint64(a.minBlock)<<uint(bits.Len64(ne)-1), s.FreeBytes)
		}
	} else {
		s.Releases = 1
	}
}

// AppendClassStats appends a row per order, smallest first, to dst and
// returns it: the published figures, as [Allocator.ReadStats] reads them,
// safe from any goroutine.
func (a *Allocator) AppendClassStats(dst []stats.ClassStats) []stats.ClassStats {
	for k := range a.orders {
		p := &a.orders[k].pub
		frees := p.frees.Load()
		allocs := p.allocs.Load()
		size := uint64(a.minBlock) << uint(k)
		live := allocs - frees
		idle := p.nfree.Load()
		dst = append(dst, stats.ClassStats{
			Size:          size,
			InUseBytes:    live * size,
			ReservedBytes: (live + idle) * size,
			LiveObjects:   live,
			IdleObjects:   idle,
			Allocs:        allocs,
			Frees:         frees,
		})
	}
	return dst
}
