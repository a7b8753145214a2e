package ringbuf

import (
	"github.com/memkit/memkit/stats"
)

// positions returns the read and write positions at one moment: the
// write position as it was while the read position was h, so that
// 0 <= t-h <= capacity.
func (r *Ring) positions() (h, t uint64) {
	for range 8 {
		h = r.head.Load()
		t = r.tail.Load()
		if r.head.Load() == h {
			return h, t
		}
	}
	// Readers keep moving: t, loaded after h, is at least h.
	return h, h + min(t-h, uint64(r.capacity))
}

// Dropped returns the number of records the [Overwrite] policy dropped to
// make room.
func (r *Ring) Dropped() uint64 { return r.dropped.Load() }

// ReadStats overwrites *st with a snapshot of the ring's statistics; it
// never allocates. A record counts as one object of slotSize bytes:
// Allocs counts records written, Frees records read or dropped by the
// [Overwrite] policy (see [Ring.Dropped] for those alone), LiveObjects
// records in the ring, and Failures writes refused by [Reject] or given up
// by [Block]. ReservedBytes is the ring's memory, allocated once at New.
// Classes holds one row, for the slot size.
//
// ReadStats is safe to call from any goroutine while others use the ring
// (a scraper of memkit.Publish or a Prometheus collector): it only loads
// the ring's atomic positions and counters, and costs the ring's users
// nothing. Its fields agree with each other: Allocs - Frees is
// LiveObjects, at most [Ring.Slots].
func (r *Ring) ReadStats(st *stats.Stats) {
	st.Reset()
	h, t := r.positions()
	live := t - h
	size := uint64(r.slotSize)
	st.InUseBytes = live * size
	st.ReservedBytes = uint64(len(r.mem))
	st.LiveObjects = live
	st.Allocs = t - r.start
	st.Frees = h - r.start
	st.Failures = r.rejected.Load()
	st.Grows = 1
	st.Classes = append(st.Classes, stats.ClassStats{
		Size:          size,
		InUseBytes:    st.InUseBytes,
		ReservedBytes: st.ReservedBytes,
		LiveObjects:   live,
		IdleObjects:   uint64(len(r.slots)) - live,
		Allocs:        st.Allocs,
		Frees:         st.Frees,
		Grows:         1,
	})
}
