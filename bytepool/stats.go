package bytepool

import (
	"github.com/memkit/memkit/stats"
)

// ReadStats fills *st with a snapshot of the pool's statistics and a row per
// size class. It does not allocate once st.Classes has room for every class.
// It is safe to call from any goroutine while others use the pool: it reads
// atomics, and takes each of a Bounded pool's shard locks in turn, never all
// at once. Counters held by live Caches are included as of their last
// refill, spill or Release.
//
// Which figures are exact: every slow-path event (Grows, Releases,
// HeapFallbacks, Failures, BadFrees, the oversize buffers' Allocs, Frees
// and bytes), everything of a [Bounded] pool, and what Caches count. The
// Allocs, Frees, LiveObjects and InUseBytes of an [Elastic] pool's own Get
// and Put are estimated from a sample of the buffers (see the package
// documentation, "Statistics"); its ReservedBytes, the buffers made and not
// yet collected by the GC, is exact as of the last GC.
func (p *Pool) ReadStats(st *stats.Stats) {
	st.Reset()
	st.Estimated = p.region == nil && p.sampleMax != sampleMaxFor(0)
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
	if p.region != nil {
		// The region is reserved whole at New, not just the slabs the
		// classes took so far; heap fallbacks and oversize buffers come on
		// top of it.
		st.ReservedBytes += uint64(len(p.region.mem) - p.region.usedSlabs()<<slabShift)
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
	if p.region != nil {
		p.boundedRows(rows)
	} else {
		p.elasticRows(rows)
	}
	return dst
}

// elasticRows fills an Elastic pool's class rows.
func (p *Pool) elasticRows(rows []stats.ClassStats) {
	scale := p.scale()
	for c := range rows {
		row, e := &rows[c], &p.elastic[c]
		// Read the puts before the gets: a buffer is got before it is put,
		// so a snapshot taken while both move sees no more puts than gets.
		puts, cputs, cidle := e.puts.Load(), e.cputs.Load(), e.cidle.Load()
		gets, cgets := e.gets.Load(), e.cgets.Load()
		row.Allocs = gets*scale + e.cacheAllocs.Load()
		row.Frees = puts*scale + e.cacheFrees.Load()
		row.LiveObjects = sat(gets+cgets, puts+cputs+cidle) * scale
		row.InUseBytes = row.LiveObjects * row.Size
		releases := e.releases.Load()
		row.Grows = e.grows.Load()
		row.Releases = releases
		made := sat(row.Grows, releases)
		row.IdleObjects = sat(made, row.LiveObjects)
		row.ReservedBytes = max(made, row.LiveObjects) * row.Size
	}
}

// boundedRows fills a Bounded pool's class rows, exact. It takes each
// shard's lock once, for all classes, and each depot's once.
func (p *Pool) boundedRows(rows []stats.ClassStats) {
	// Until the rows are finished, ReservedBytes holds the class's heapLive
	// summed over shards: a two's-complement sum, which a foreign buffer
	// put back can drive below zero.
	for i := range p.shards {
		s := &p.shards[i]
		s.Lock.Lock()
		for c := range rows {
			l, row := &s.lists[c], &rows[c]
			row.Allocs += l.allocs
			row.Frees += l.frees
			row.IdleObjects += uint64(len(l.bufs))
			row.ReservedBytes += l.heapLive
		}
		s.Unlock()
	}
	for c := range rows {
		row := &rows[c]
		d := &p.depots[c]
		d.mu.Lock()
		row.Allocs += d.allocs
		row.Frees += d.frees
		row.IdleObjects += uint64(len(d.bufs))
		d.mu.Unlock()
		heapLive := uint64(max(int64(row.ReservedBytes), 0))
		row.LiveObjects = sat(row.Allocs, row.Frees)
		row.InUseBytes = row.LiveObjects * row.Size
		slabs := p.region.classSlabs(c)
		row.Grows = uint64(slabs)
		row.ReservedBytes = uint64(slabs)<<slabShift + heapLive*row.Size
	}
}

// sat returns a-b, or 0 if b > a (a foreign buffer put back can make frees
// outrun allocs).
func sat(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
