package extent

import (
	"sync/atomic"

	"github.com/memkit/memkit/internal/snapshot"
	"github.com/memkit/memkit/stats"
)

// The statistics an Allocator shows other goroutines. The owner keeps its
// counters in plain fields, which only it may read, and copies them into a
// published snapshot that any goroutine may read: at every slow-path event
// (a block reserved or given back, a heap fallback, a failure, a bad free,
// Trim, Close), every publishEvery-th Malloc and Free, the first
// checkEvery-th Malloc or Free after a reader asked for fresh figures, and
// at PublishStats. So Malloc and Free pay a mask test, and the readers
// never touch the owner's state.

// publishEvery is how often, in Mallocs (and in Frees), the owner copies
// its counters into the snapshot: a power of two.
const publishEvery = 64

// Indexes of the snapshot's values.
const (
	pubReserved = iota
	pubFree
	pubLargest
	pubAllocs
	pubFrees
	pubFallbacks
	pubFailures
	pubGrows
	pubReleases
	pubBadFrees
	nPub
)

// published is the published copy of an allocator's figures, under a
// sequence lock whose only writer is the owner, so that a reader's values
// are all of one moment.
type published struct {
	seq snapshot.Seq
	v   [nPub]atomic.Uint64
}

// checkEvery is how often, in Mallocs (and in Frees), the owner looks
// whether a reader asked for fresh figures: a power of two dividing
// publishEvery, so that the hot paths test one mask.
const checkEvery = 16

// maybePublish publishes after the Malloc or Free that made a counter a
// multiple of checkEvery, if it is a multiple of publishEvery too or a
// reader asked. Out of line: the hot paths only test the mask.
//
//go:noinline
func (a *Allocator) maybePublish(c uint64) {
	if c%publishEvery == 0 || a.pub.seq.Asked() {
		a.publish()
	}
}

// publish copies the owner's figures into the snapshot. LargestFree counts
// the ranges of the front cache unmerged (PublishStats merges them).
func (a *Allocator) publish() {
	largest := a.t.nodes[a.t.root].max
	for i := range a.nRecent {
		largest = max(largest, a.recent[i].end-a.recent[i].start)
	}
	v := [nPub]uint64{
		pubReserved:  a.reserved,
		pubFree:      a.free,
		pubLargest:   uint64(largest),
		pubAllocs:    a.allocs,
		pubFrees:     a.frees,
		pubFallbacks: a.fallbacks,
		pubFailures:  a.failures,
		pubGrows:     a.grows,
		pubReleases:  a.releases,
		pubBadFrees:  a.badFrees,
	}
	a.pub.seq.Store(a.pub.v[:], v[:])
}

// PublishStats makes every later [Allocator.ReadStats], on any goroutine,
// see the allocator's exact figures as of now, with the front cache merged
// into the index (as a Free or Malloc may do later anyway) so that
// LargestFree sees its ranges merged with their neighbours. Only the
// goroutine that uses the allocator may call it, between its calls: where
// figures should be current, such as after a batch or in a test. It costs
// merging the front cache (at most 8 ranges) and about a dozen atomic
// stores, and does not allocate once the index has held as many ranges
// before.
func (a *Allocator) PublishStats() {
	a.flushRecent()
	a.publish()
}

// ReadStats fills *s with the figures the owner last published (see
// [Allocator.PublishStats]). It is safe to call from any goroutine while
// the owner uses the allocator, such as the scraper of
// [github.com/memkit/memkit.Publish]: it only reads the published
// snapshot, whose fields are all of one moment. The owner publishes at
// every block reserved or given back, heap fallback, failure and bad free
// (so Grows, Releases, ReservedBytes, HeapFallbacks, Failures and BadFrees
// are always current), at every 64th Malloc and every 64th Free, at the
// next 16th Malloc or Free after a ReadStats asked for fresh figures
// (ReadStats waits a few scheduler yields for that and otherwise returns
// what is published, so the next ReadStats sees them), and at
// PublishStats and Trim. So Allocs, Frees and the byte gauges lag the
// owner by at most 63 Mallocs and 63 Frees, and by at most 15 of each once
// a reader has asked; PublishStats makes them exact.
//
// ReservedBytes is the bytes of all blocks (heap fallbacks included),
// InUseBytes those not in free ranges (Borrow's chunks count as in use),
// and FreeBytes their difference, the bytes in free ranges. LargestFree is
// the longest free range, the largest Malloc served without reserving a
// block (the ranges waiting in the front cache count unmerged, but at
// PublishStats and Trim), so [stats.Stats.Fragmentation] is near 0 when the
// free memory is in few long ranges and near 1 when it is scattered in
// short ones. Allocs counts Malloc and TryMalloc calls that returned memory
// and Frees counts Free and FreeRest calls, so LiveObjects, Allocs-Frees
// floored at 0, is exact only when every allocation is freed by one call;
// partial frees make it undercount. Grows and Releases count blocks
// reserved and given back. There are no class rows. It is O(1) and does
// not allocate.
func (a *Allocator) ReadStats(s *stats.Stats) {
	a.pub.seq.Settle()
	var v [nPub]uint64
	a.pub.seq.Load(a.pub.v[:], v[:])
	fill(s, &v)
}

// fill sets *s from published values.
func fill(s *stats.Stats, v *[nPub]uint64) {
	s.Reset()
	s.ReservedBytes = v[pubReserved]
	s.FreeBytes = min(v[pubFree], v[pubReserved])
	s.InUseBytes = s.ReservedBytes - s.FreeBytes
	s.LargestFree = v[pubLargest]
	s.Allocs = v[pubAllocs]
	s.Frees = v[pubFrees]
	if s.Allocs > s.Frees {
		s.LiveObjects = s.Allocs - s.Frees
	}
	s.HeapFallbacks = v[pubFallbacks]
	s.Failures = v[pubFailures]
	s.Grows = v[pubGrows]
	s.Releases = v[pubReleases]
	s.BadFrees = v[pubBadFrees]
}
