// Package stats is memkit's statistics vocabulary: [Stats], [ClassStats] and
// [StatsSource], the one shape every memkit allocator reports in.
//
// The root package memkit names the same types (memkit.Stats is an alias of
// stats.Stats) and adds what needs net/http: expvar publishing and the debug
// page. The allocators import this leaf package instead, so that a program
// that only allocates links neither net/http nor expvar.
package stats

import (
	"fmt"
	"strings"
)

// Stats is a point-in-time snapshot of an allocator's memory and activity.
//
// Every memkit allocator reports in this one shape, so that one Prometheus
// collector, one expvar variable and one debug page serve them all. Gauges
// describe the present; counters only grow over the allocator's lifetime, so
// rates are differences between two snapshots.
//
// A Stats value is filled by a [StatsSource]. Reusing one Stats across calls
// makes ReadStats allocation-free: the Classes slice is refilled in place
// (dst = dst[:0] then appended), as the strconv Append functions do.
//
// Stats is a plain value; it may be copied. A zero Stats is an empty snapshot.
type Stats struct {
	// Gauges.

	// InUseBytes is the number of bytes in objects handed out and not yet
	// returned, counted at the capacity the allocator reserved for them
	// (a 100-byte request served from a 128-byte class counts 128).
	InUseBytes uint64
	// ReservedBytes is the memory the allocator holds: in use plus idle
	// memory kept for reuse. Memory already given back to the GC or the OS
	// is not counted.
	ReservedBytes uint64
	// LiveObjects is the number of objects handed out and not yet returned.
	LiveObjects uint64
	// FreeBytes is the reserved memory not in use that a range allocator
	// (extent, buddy) can carve allocations from: ReservedBytes less
	// InUseBytes. Pools, whose idle memory is in objects of fixed classes,
	// leave it zero.
	FreeBytes uint64
	// LargestFree is the largest single piece of free memory, the largest
	// request a range allocator can serve without new memory: extent's
	// longest free range, buddy's largest free block (the largest order with
	// a free block). Zero for pools. See [Stats.Fragmentation].
	LargestFree uint64

	// Counters.

	// Allocs counts successful allocations, including heap fallbacks.
	Allocs uint64
	// Frees counts objects returned and accepted.
	Frees uint64
	// HeapFallbacks counts allocations served by the Go heap instead of the
	// allocator's own memory: sizes above the largest class, or requests made
	// when a budget was exhausted.
	HeapFallbacks uint64
	// Failures counts allocation attempts that failed without side effects
	// (TryAlloc-style calls that returned false, ErrBudget or ErrNoSpace).
	Failures uint64
	// Grows counts times the allocator obtained new memory (a new buffer from
	// the heap, a new slab, a new chunk).
	Grows uint64
	// Releases counts times the allocator gave idle memory back to the GC or
	// the OS.
	Releases uint64
	// BadFrees counts frees the allocator rejected: memory it did not hand
	// out, a slice whose start or capacity changed. Rejected memory is left to
	// the GC; it is never filed into a class it does not fit.
	BadFrees uint64

	// Estimated reports that InUseBytes, LiveObjects, Allocs and Frees, in
	// total and in the class rows, are estimates from a sample of the
	// objects, not counts: an Elastic bytepool's, and so grpcpool's and
	// httppool's by default, unless the pool was built with
	// bytepool.WithExactStats. Every other figure is exact. The debug page,
	// the Prometheus help text and the dashboard say so.
	Estimated bool

	// Classes holds one row per size class, smallest first. Allocators
	// without size classes leave it empty.
	Classes []ClassStats
}

// ClassStats is one size class's row of a [Stats] snapshot.
//
// Its fields have the meaning of the fields of Stats with the same names,
// restricted to objects of this class.
type ClassStats struct {
	// Size is the capacity, in bytes, of every object of this class.
	Size uint64

	InUseBytes    uint64
	ReservedBytes uint64
	LiveObjects   uint64
	// IdleObjects is the number of objects of this class held for reuse.
	IdleObjects uint64

	Allocs uint64
	Frees  uint64
	Grows  uint64
	// Releases counts objects of this class given back to the GC or the OS.
	Releases uint64
}

// StatsSource is implemented by every memkit allocator.
type StatsSource interface {
	// ReadStats overwrites *s with a snapshot of the allocator's statistics.
	// It does not allocate when s.Classes has capacity for every class,
	// which is the case from the second call on when s is reused.
	//
	// ReadStats may be called from any goroutine while other goroutines
	// use the allocator: memkit.Publish's observers (expvar, the debug
	// page, the Prometheus collector of package prom) call it from the
	// goroutine serving a read or a scrape. Every memkit allocator's
	// ReadStats is safe for that; an implementation of your own must be
	// too. A snapshot taken while other goroutines use the allocator is
	// consistent per field, not across fields: each counter is exact, but
	// InUseBytes may reflect an allocation that Allocs does not yet.
	ReadStats(s *Stats)
}

// Reset clears every field of s and empties s.Classes, keeping its capacity.
func (s *Stats) Reset() {
	classes := s.Classes[:0]
	*s = Stats{Classes: classes}
}

// Fragmentation is 1 - LargestFree/FreeBytes: 0 when the free memory is
// one piece (or there is none), near 1 when it is scattered in pieces much
// smaller than their sum, so that a request for less than FreeBytes may
// still need new memory.
func (s *Stats) Fragmentation() float64 {
	if s.FreeBytes == 0 {
		return 0
	}
	return 1 - float64(s.LargestFree)/float64(s.FreeBytes)
}

// Add adds the gauges and counters of o to s and, for classes of equal size,
// their class rows. It is meant for folding the stats of several allocators
// (shards, tenants) into one. LargestFree is the larger of the two, since
// one request is served by one allocator, so the fold's Fragmentation
// describes the free memory of all of them. Class rows of o whose size s
// lacks are appended; the result stays sorted by size if both inputs were.
func (s *Stats) Add(o *Stats) {
	s.InUseBytes += o.InUseBytes
	s.ReservedBytes += o.ReservedBytes
	s.LiveObjects += o.LiveObjects
	s.FreeBytes += o.FreeBytes
	s.LargestFree = max(s.LargestFree, o.LargestFree)
	s.Allocs += o.Allocs
	s.Frees += o.Frees
	s.HeapFallbacks += o.HeapFallbacks
	s.Failures += o.Failures
	s.Grows += o.Grows
	s.Releases += o.Releases
	s.BadFrees += o.BadFrees
	s.Estimated = s.Estimated || o.Estimated
	for _, oc := range o.Classes {
		i := 0
		for i < len(s.Classes) && s.Classes[i].Size < oc.Size {
			i++
		}
		if i < len(s.Classes) && s.Classes[i].Size == oc.Size {
			s.Classes[i].add(&oc)
			continue
		}
		s.Classes = append(s.Classes, ClassStats{})
		copy(s.Classes[i+1:], s.Classes[i:])
		s.Classes[i] = oc
	}
}

func (c *ClassStats) add(o *ClassStats) {
	c.InUseBytes += o.InUseBytes
	c.ReservedBytes += o.ReservedBytes
	c.LiveObjects += o.LiveObjects
	c.IdleObjects += o.IdleObjects
	c.Allocs += o.Allocs
	c.Frees += o.Frees
	c.Grows += o.Grows
	c.Releases += o.Releases
}

// String formats the snapshot as a summary line followed by a table with a
// row per size class, the dump go-slab users print and chart:
//
//	in use 4KiB  reserved 8KiB  live 1  allocs 3  frees 2  fallbacks 0  failures 0  grows 2  releases 0  bad frees 0
//	     class       in use     reserved    live    idle      allocs       frees   grows  releases
//	      4KiB         4KiB         8KiB       1       1           3           2       2         0
//
// When FreeBytes is not zero (a range allocator with free memory), a line
// about the free memory follows the summary:
//
//	free 1MiB  largest free 512KiB  fragmentation 0.50
func (s *Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "in use %s  reserved %s  live %d  allocs %d  frees %d  fallbacks %d  failures %d  grows %d  releases %d  bad frees %d\n",
		FormatBytes(s.InUseBytes), FormatBytes(s.ReservedBytes), s.LiveObjects,
		s.Allocs, s.Frees, s.HeapFallbacks, s.Failures, s.Grows, s.Releases, s.BadFrees)
	if s.FreeBytes > 0 {
		fmt.Fprintf(&b, "free %s  largest free %s  fragmentation %.2f\n",
			FormatBytes(s.FreeBytes), FormatBytes(s.LargestFree), s.Fragmentation())
	}
	if len(s.Classes) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "%10s %12s %12s %7s %7s %11s %11s %7s %9s\n",
		"class", "in use", "reserved", "live", "idle", "allocs", "frees", "grows", "releases")
	for i := range s.Classes {
		c := &s.Classes[i]
		fmt.Fprintf(&b, "%10s %12s %12s %7d %7d %11d %11d %7d %9d\n",
			FormatBytes(c.Size), FormatBytes(c.InUseBytes), FormatBytes(c.ReservedBytes),
			c.LiveObjects, c.IdleObjects, c.Allocs, c.Frees, c.Grows, c.Releases)
	}
	return b.String()
}

// FormatBytes formats n in binary units: "512B", "4KiB", "1.5MiB".
// Exact multiples print without a fraction.
func FormatBytes(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := uint64(1024), 0
	for m := n / 1024; m >= 1024 && exp < len(units)-1; m /= 1024 {
		div *= 1024
		exp++
	}
	if n%div == 0 {
		return fmt.Sprintf("%d%ciB", n/div, units[exp])
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), units[exp])
}
