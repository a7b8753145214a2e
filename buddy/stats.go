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
//
// Each publication, of one row or of all, is one snapshot.Seq write that
// also stores the totals over every order, summed from the owner's own
// counters: a reader loads the rows and totals it shows inside one read of
// the sequence, so every row and the totals are each of one moment and
// possible (rows of different orders may be of different moments, and lag
// the totals, but never show more blocks than the region holds), and the
// totals never show more in use than the region.

// publishEvery is how often, in Allocs (and in Frees) of an order, the
// owner publishes that order's row: a power of two.
const publishEvery = 64

// orderRow is the published copy of an order's counters.
type orderRow struct {
	allocs, frees, nfree atomic.Uint64
}

// published is the allocator-wide part of what ReadStats reads.
type published struct {
	seq      snapshot.Seq // a reader's request, answered by each publication
	allocs   atomic.Uint64
	frees    atomic.Uint64
	inUse    atomic.Uint64 // bytes of the blocks handed out
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
		a.publish(k)
	}
}

// publish publishes order k's row, or every row for k < 0, and the
// allocator-wide figures, as one publication.
func (a *Allocator) publish(k int) {
	p := &a.pub
	p.seq.BeginWrite()
	if k >= 0 {
		a.publishRow(k)
	} else {
		for k := range a.orders {
			a.publishRow(k)
		}
	}
	var allocs, frees, inUse uint64
	for k := range a.orders {
		o := &a.orders[k]
		allocs += o.allocs
		frees += o.frees
		inUse += (o.allocs - o.frees) << uint(k)
	}
	p.allocs.Store(allocs)
	p.frees.Store(frees)
	p.inUse.Store(inUse * uint64(a.minBlock))
	p.nonEmpty.Store(a.nonEmpty)
	p.failures.Store(a.failures)
	p.badFrees.Store(a.badFrees)
	p.closed.Store(a.closed)
	p.seq.EndWrite()
}

func (a *Allocator) publishRow(k int) {
	o := &a.orders[k]
	o.pub.allocs.Store(o.allocs)
	o.pub.frees.Store(o.frees)
	o.pub.nfree.Store(uint64(o.nfree))
}

// publishAll publishes every row and the allocator-wide figures.
func (a *Allocator) publishAll() { a.publish(-1) }

// countBadFree counts a bad free and publishes it, before the caller panics.
func (a *Allocator) countBadFree() {
	a.badFrees++
	a.publishAll()
}

// freeAllAtClose counts every block still handed out as freed by Close,
// which gives the region back, and every free block as gone: a closed
// allocator holds nothing.
func (a *Allocator) freeAllAtClose() {
	for k := range a.orders {
		o := &a.orders[k]
		o.frees = o.allocs
		o.nfree = 0
	}
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
// published atomics, the totals all of one moment and each row of one
// moment, so it never shows an impossible state (more in use than
// reserved, more than the region, more frees than allocations). The owner publishes an order's
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
// free block: free buddies kept apart by lazy merging (see [Allocator])
// count as two blocks until an Alloc that needs them merged merges them, so [stats.Stats.Fragmentation] may overstate how scattered
// the free memory is by up to those pairs. Grows is 1 (the region),
// Releases 1 once closed, when ReservedBytes, InUseBytes, FreeBytes and
// LargestFree are 0: Close gives the region back, and counts the blocks
// still handed out as freed (Frees) and the free ones as gone. It costs
// O(orders) and does not allocate once s.Classes has room for every order.
func (a *Allocator) ReadStats(s *stats.Stats) {
	a.pub.seq.Settle()
	p := &a.pub
	for {
		v := p.seq.BeginRead()
		s.Reset()
		s.Classes = a.appendRows(s.Classes)
		s.Allocs = p.allocs.Load()
		s.Frees = p.frees.Load()
		s.InUseBytes = p.inUse.Load()
		s.Failures = p.failures.Load()
		s.BadFrees = p.badFrees.Load()
		closed := p.closed.Load()
		nonEmpty := p.nonEmpty.Load()
		if p.seq.Retry(v) {
			continue
		}
		s.LiveObjects = s.Allocs - s.Frees
		s.Grows = 1
		if closed {
			s.Releases = 1
			return
		}
		s.ReservedBytes = uint64(a.size)
		s.FreeBytes = s.ReservedBytes - s.InUseBytes
		if nonEmpty != 0 {
			s.LargestFree = min(uint64(a.minBlock)<<uint(bits.Len64(nonEmpty)-1), s.FreeBytes)
		}
		return
	}
}

// AppendClassStats appends a row per order, smallest first, to dst and
// returns it: the published figures, as [Allocator.ReadStats] reads them,
// safe from any goroutine, each row of one moment.
func (a *Allocator) AppendClassStats(dst []stats.ClassStats) []stats.ClassStats {
	for {
		v := a.pub.seq.BeginRead()
		out := a.appendRows(dst)
		if !a.pub.seq.Retry(v) {
			return out
		}
	}
}

// appendRows appends the published rows to dst; the caller brackets it
// with a read of the sequence.
func (a *Allocator) appendRows(dst []stats.ClassStats) []stats.ClassStats {
	for k := range a.orders {
		p := &a.orders[k].pub
		allocs := p.allocs.Load()
		frees := p.frees.Load()
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
