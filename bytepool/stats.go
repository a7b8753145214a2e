package bytepool

import (
	"github.com/memkit/memkit/stats"
)

// ReadStats fills *st with a snapshot of the pool's statistics and a row per
// size class. It does not allocate once st.Classes has room for every class.
// It is safe to call from any goroutine while others use the pool: it reads
// atomics, and a Bounded pool's slots (a load of each carved buffer's, so
// it costs time in proportion to the buffers carved). Counters held by live
// Caches are included as of their last refill, spill or Release.
//
// Which figures are exact: every slow-path event (Grows, Releases,
// HeapFallbacks, Failures, BadFrees, the oversize buffers' Allocs, Frees
// and bytes), what Caches count, and everything of a [Bounded] pool when
// no Get or Put runs meanwhile (each Get counts itself in its buffer's
// slot with a plain add, and ReadStats sums the slots: no shared counter,
// no locked instruction, whatever the options). The Allocs, Frees,
// LiveObjects and InUseBytes of an [Elastic] pool's own Get and Put are
// estimated from a sample of the buffers (see docs/bytepool.md,
// "Statistics"); its ReservedBytes, the buffers made and not yet collected
// by the GC, is exact as of the last GC.
func (p *Pool) ReadStats(st *stats.Stats) {
	st.Reset()
	st.Estimated = p.elastic != nil && p.sampleMax != sampleMaxFor(0)
	st.Classes = p.AppendClassStats(st.Classes)
	for i := range st.Classes {
		c := &st.Classes[i]
		st.InUseBytes += c.InUseBytes
		st.ReservedBytes += c.ReservedBytes
		st.LiveObjects += c.LiveObjects
		st.Allocs += c.Allocs
		st.Frees += c.Frees
		st.Grows += c.Grows
		st.Releases += c.Releases
	}
	n := &p.counts
	st.Allocs += n.oversizeAllocs.Load()
	st.Frees += n.oversizeFrees.Load()
	st.HeapFallbacks = n.fallbacks.Load()
	st.Failures = n.failures.Load()
	st.BadFrees = n.badFrees.Load()
	// Foreign buffers put back can drive this below zero.
	oversizeBytes := uint64(max(n.oversizeBytes.Load(), 0))
	st.InUseBytes += oversizeBytes
	st.ReservedBytes += oversizeBytes
	st.LiveObjects += sat(n.oversizeAllocs.Load(), n.oversizeFrees.Load())
	if p.bounded != nil {
		// The region is reserved whole at New, not just the slabs the
		// classes took so far; heap fallbacks and oversize buffers come on
		// top of it.
		st.ReservedBytes += p.bounded.untaken()
	}
}

// AppendClassStats appends a row per size class to dst and returns it.
// Like ReadStats it may be called from any goroutine.
func (p *Pool) AppendClassStats(dst []stats.ClassStats) []stats.ClassStats {
	base := len(dst)
	for _, size := range p.sizes {
		dst = append(dst, stats.ClassStats{Size: uint64(size)})
	}
	rows := dst[base:]
	if p.bounded != nil {
		p.bounded.rows(rows)
	} else {
		p.elastic.rows(rows)
	}
	return dst
}

// sat returns a-b, or 0 if b > a (a foreign buffer put back can make frees
// outrun allocs).
func sat(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
