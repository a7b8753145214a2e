package slab

import (
	"github.com/memkit/memkit/stats"
)

// pubEvery is how many Allocs (or DecRefs) of a class the hot paths count
// between two publications of the count: ReadStats's Allocs and Frees lag
// the exact counts by less than pubEvery per class, and by nothing after a
// slab of the class was taken or released or a fresh chunk handed out (of
// every chunk of a slab once, so no steady state does it per operation).
//
// This is not internal/snapshot's Seq, which arena and extent use: a
// publication here is one atomic store of one counter, ordered (allocs
// before frees, read in the other order) so that no read comes out
// negative, where Seq.Store takes two read-modify-write atomics and a
// slice of values, which makes class.take too costly to inline into
// Alloc's hot path (inline cost 107 against the budget of 80, measured).
const pubEvery = 64

// testHookReadStats, set by tests only, runs in readStats between the
// loads of a class's counts and of its slabs: where a concurrent owner's
// work makes the counts disagree.
var testHookReadStats func()

// freed counts a DecRef that freed a chunk of the class, and publishes the
// count every pubEvery.
func (cl *class) freed() {
	if cl.frees++; cl.frees%pubEvery == 0 {
		cl.pubFrees.Store(cl.frees)
	}
}

// publish makes the class's exact counts of Alloc and DecRef visible to
// ReadStats: allocs first, so that a reader that loads frees first never
// sees more frees than allocs.
func (cl *class) publish() {
	cl.pubAllocs.Store(cl.allocs)
	cl.pubFrees.Store(cl.frees)
}

// publishAll publishes the exact counts of every class: for the owner's
// own reads, in tests.
func (a *Arena) publishAll() {
	for c := range a.classes {
		a.classes[c].publish()
	}
}

// ReadStats overwrites *st with a snapshot of the arena's statistics and a
// row per chunk class, smallest first. It does not allocate once
// st.Classes has room for every class.
//
// Unlike the arena's other methods, ReadStats may be called from any
// goroutine while the owner uses the arena (by [memkit.Publish] or a
// Prometheus collector, for instance): it only reads counters that the
// arena publishes with atomic stores, so the owner's Alloc and DecRef pay
// no atomic instruction for it. Every counter is a value the arena had,
// none is negative, and no state is impossible: a class's LiveObjects
// is Allocs less Frees capped at the chunks its slabs hold, so InUseBytes
// never exceeds ReservedBytes. But they are not one snapshot: a class's
// Allocs and Frees (and so its LiveObjects, InUseBytes and IdleObjects) are exact as
// when a slab of the class was last taken or released or a chunk first
// handed out, and lag the exact counts by less than 64 each otherwise. Grows, Releases,
// ReservedBytes, Failures and BadFrees are exact.
//
// A chunk counts at its class size in InUseBytes; ReservedBytes counts
// every slab the arena holds, whole. Grows and Releases count slabs; a
// class row's Releases counts the chunks of the slabs it released.
// Failures counts Alloc and TryAlloc calls that returned nothing; BadFrees
// counts DecRef and LocDecRef calls that panicked.
func (a *Arena) ReadStats(st *stats.Stats) { a.readStats(st, false) }

// readStats is ReadStats; with exact, for a caller that has the arena to
// itself (a Shared holding the shard's lock), it reads the owner's exact
// counts instead of the published ones.
func (a *Arena) readStats(st *stats.Stats, exact bool) {
	st.Reset()
	for c := range a.classes {
		cl := &a.classes[c]
		// Frees before allocs: both only grow, and publish stores allocs
		// first, so live cannot come out negative.
		frees := cl.pubFrees.Load()
		allocs := max(cl.pubAllocs.Load(), frees)
		if exact {
			// Of a Shared's shard: the chunks its classes' idle sets hold
			// are the Shared's to count, not the shard's.
			frees, allocs = cl.frees-cl.drained, cl.allocs-cl.carved
		}
		if testHookReadStats != nil {
			testHookReadStats()
		}
		size := uint64(cl.size)
		slabs := cl.pubSlabs.Load()
		releases := cl.releases.Load()
		grows := cl.grows.Load()
		room := slabs * uint64(cl.perSlab)
		// The counts are loaded one after the other while the owner works:
		// frees published before a slab was released and the slab count
		// after it would put chunks in use in no slab. No more chunks can
		// be live than the class's slabs hold, so in use never passes
		// reserved.
		live := min(allocs-frees, room)
		st.Classes = append(st.Classes, stats.ClassStats{
			Size:          size,
			InUseBytes:    live * size,
			ReservedBytes: slabs * uint64(a.slabSize),
			LiveObjects:   live,
			IdleObjects:   room - min(live, room),
			Allocs:        allocs,
			Frees:         frees,
			Grows:         grows,
			Releases:      releases * uint64(cl.perSlab),
		})
		st.InUseBytes += live * size
		st.ReservedBytes += slabs * uint64(a.slabSize)
		st.LiveObjects += live
		st.Allocs += allocs
		st.Frees += frees
		st.Grows += grows
		st.Releases += releases
	}
	st.Failures = a.failures.Load()
	st.BadFrees = a.badFrees.Load()
}
