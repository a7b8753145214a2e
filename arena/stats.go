package arena

import (
	"sync/atomic"

	"github.com/memkit/memkit/internal/snapshot"
	"github.com/memkit/memkit/stats"
)

// The statistics an Arena or a Typed shows other goroutines. The owner
// keeps its counters in plain fields, which only it may read, and copies
// them into a published snapshot that any goroutine may read: at every
// slow-path event (a chunk taken, spare or new, a dedicated allocation, a
// heap fallback, a failure), at Reset, Free and Pool.Put, at the first
// slow path after a reader asked for fresh figures, and at PublishStats.
// So New and MakeSlice's fast paths, a bump in the current chunk, pay
// nothing, and the readers never touch the owner's state.

// Indexes of the snapshot's values.
const (
	pubInUse = iota
	pubReserved
	pubLive
	pubAllocs
	pubFrees
	pubFallbacks
	pubFailures
	pubGrows
	pubReleases
	nPub
)

// published is the published copy of an arena's figures, under a sequence
// lock whose only writer is the owner, so that a reader's values are all
// of one moment.
type published struct {
	seq snapshot.Seq
	v   [nPub]atomic.Uint64
}

// events counts the slow-path events that publish: chunks taken (spare or
// new, dedicated allocations included), heap fallbacks and failures.
func (c *core) events() uint64 {
	return c.grows + c.spares + c.fallbacks + c.failures
}

// due reports whether the owner publishes at the end of a slow path that
// began when events() was ev: if it made an event, or a reader asked.
func (c *core) due(ev uint64) bool {
	return c.events() != ev || c.pub.seq.Asked()
}

// store publishes the owner's figures, given the bytes in use and the
// objects handed out since the last Reset, which the Arena and the Typed
// count differently. Only the owner calls it.
func (c *core) store(inUse uintptr, objs uint64) {
	v := [nPub]uint64{
		pubInUse:     uint64(inUse + c.largeBytes),
		pubReserved:  c.reserved,
		pubLive:      objs,
		pubAllocs:    c.allocs + objs,
		pubFrees:     c.frees,
		pubFallbacks: c.fallbacks,
		pubFailures:  c.failures,
		pubGrows:     c.grows,
		pubReleases:  c.releases,
	}
	c.pub.seq.Store(c.pub.v[:], v[:])
}

// read fills *s from the published snapshot, asking the owner for fresh
// figures first.
func (c *core) read(s *stats.Stats) {
	c.pub.seq.Settle()
	var v [nPub]uint64
	c.pub.seq.Load(c.pub.v[:], v[:])
	s.Reset()
	s.InUseBytes = v[pubInUse]
	s.ReservedBytes = v[pubReserved]
	s.LiveObjects = v[pubLive]
	s.Allocs = v[pubAllocs]
	s.Frees = v[pubFrees]
	s.HeapFallbacks = v[pubFallbacks]
	s.Failures = v[pubFailures]
	s.Grows = v[pubGrows]
	s.Releases = v[pubReleases]
}

// publish copies the arena's figures into the snapshot.
func (a *Arena) publish() {
	var inUse uintptr
	for _, sl := range a.lanes {
		inUse += sl.inUse()
	}
	a.store(inUse, uint64(a.objs))
}

// PublishStats makes every later [Arena.ReadStats], on any goroutine, see
// the arena's exact figures as of now. Only the goroutine that uses the
// arena may call it, between its calls: where figures should be current,
// such as after a batch or in a test. It costs about a dozen atomic
// stores and a look at the current chunk of each element type, and does
// not allocate.
func (a *Arena) PublishStats() { a.publish() }

// ReadStats fills *s with the figures the owner last published (see
// [Arena.PublishStats]). It is safe to call from any goroutine while the
// owner uses the arena, such as the scraper of
// [github.com/memkit/memkit.Publish]: it only reads the published
// snapshot, whose fields are all of one moment. The owner publishes at
// every slow-path event (a chunk taken, spare or new, a dedicated
// allocation, a heap fallback, a failure; so Grows, Releases,
// ReservedBytes, HeapFallbacks and Failures are always current), at
// Reset, Free and [Pool.Put], at the next allocation that takes the slow
// path after a ReadStats asked for fresh figures (ReadStats waits a few
// scheduler yields for that and otherwise returns what is published, so
// the next ReadStats sees them), and at PublishStats. The fast paths of
// [New] and [MakeSlice], a bump in the current chunk of the element
// type, do not publish, so InUseBytes, LiveObjects and Allocs lag the
// owner by at most what it handed out from the current chunks since: at
// most one chunk ([DefaultChunkSize] or [WithChunkSize] bytes) per
// element type with pointers and one for all pointer-free types, and the
// objects those bytes hold, plus any objects of zero-size types (which
// take no bytes); PublishStats makes them exact.
//
// InUseBytes is the bytes handed out since the last Reset (alignment
// padding included), ReservedBytes the memory the arena holds, LiveObjects
// the objects and slices handed out since the last Reset; Allocs counts
// every allocation, heap fallbacks included, Frees the objects freed by
// Reset and Free, HeapFallbacks the objects that came from the Go heap
// because the budget was exhausted (they are not counted as in use or
// live), Failures the TryNew-style calls refused, Grows the chunks and
// dedicated allocations the arena took, Releases those it gave up. It is
// O(1) and does not allocate.
func (a *Arena) ReadStats(s *stats.Stats) { a.read(s) }

var _ stats.StatsSource = (*Arena)(nil)

// publish copies the Typed's figures into the snapshot.
func (c *tcore) publish() {
	var inUse uintptr
	if size := c.s.info.size; size > 0 {
		inUse = c.s.fullUsed
		if h := c.head(); h.cur != nil && !c.heapCur {
			inUse += uintptr(h.next) * size
		}
	}
	c.store(inUse, uint64(c.objects()))
}

// PublishStats makes every later [Typed.ReadStats], on any goroutine, see
// the arena's exact figures as of now. Only the goroutine that uses the
// arena may call it, between its calls: where figures should be current,
// such as after a batch or in a test. It costs about a dozen atomic
// stores and does not allocate.
func (t *Typed[T]) PublishStats() { t.c.publish() }

// ReadStats fills *s with the figures the owner last published (see
// [Typed.PublishStats]), with the meanings of [Arena.ReadStats]. It is
// safe to call from any goroutine while the owner uses the arena, such as
// the scraper of [github.com/memkit/memkit.Publish]: it only reads the
// published snapshot, whose fields are all of one moment, and never
// changes what the arena hands out. The owner publishes as an Arena does:
// at every chunk taken, dedicated allocation, heap fallback and failure,
// at Reset and Free, at the next [Typed.New] or [Typed.MakeSlice] that
// takes the slow path after a ReadStats asked (ReadStats waits a few
// scheduler yields for that), and at PublishStats. So Grows, Releases,
// ReservedBytes, HeapFallbacks and Failures are always current, and
// InUseBytes, LiveObjects and Allocs lag the owner by at most the objects
// of one chunk (for a zero-size T, by the objects since the last
// publication); PublishStats makes them exact. It is O(1) and does not
// allocate.
func (t *Typed[T]) ReadStats(s *stats.Stats) { t.c.read(s) }

var _ stats.StatsSource = (*Typed[int])(nil)
