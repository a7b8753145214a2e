// Package memkit is the root of a toolkit of memory-management tools for Go
// programs that allocate many buffers or objects per second: size-class
// pools, slab arenas, typed arenas, range allocators and off-heap memory,
// each safe by default, measured against the pools Go programs use today,
// and reporting the same statistics.
//
// This package holds no allocator. It names the statistics vocabulary every
// allocator reports in — [Stats], [ClassStats] and [StatsSource], defined in
// the leaf package [github.com/memkit/memkit/stats] — and serves it: [Publish]
// makes an allocator an expvar variable and lists it on the debug page that
// [Handler] serves, and github.com/memkit/memkit/prom exports it to
// Prometheus. The allocators import the leaf package, not this one, so a
// program that only allocates links neither net/http nor expvar (importing
// this package links both, and expvar registers /debug/vars on
// http.DefaultServeMux). The allocators live in subpackages:
//
//	package   what                                     goroutine-safe     zeroed        memory
//	bytepool  size-class []byte pool, per-goroutine     Pool yes,          WithZeroing   Go heap
//	          Cache, Elastic and Bounded policies       Cache no
//	slab      refcounted chunks, Loc handles, chains,   Arena no,          no            Go heap or any malloc
//	          typed views for pointer-free records      Shared yes                       (off-heap)
//	ringbuf   ring of fixed-size slots                  yes                no            Go heap or given memory
//	extent    exact-size ranges, partial free, Borrow   Allocator no,      no            Go heap or off-heap
//	                                                    Shared yes
//	buddy     buddy allocator over one region           no                 no            Go heap or off-heap
//	offheap   mmap'd memory outside the Go heap         yes                yes           off-heap
//	arena     GC-safe typed arenas: New[T], MakeSlice,  Arena, Typed no;   yes           Go heap, typed chunks
//	          Append, Reset; Typed[T]; Pool             Pool yes
//	buffer    pooled Buffer, FixedPool, JSON writer,    Pool, FixedPool    no            Go heap (bytepool)
//	          Slice and zero-copy Reader                yes; the rest no
//
// # Safety
//
// Misuse that costs O(1) to detect — a negative size, a double free where
// the allocator keeps a state bit, memory the allocator did not hand out —
// panics with a message prefixed "memkit/<package>: " or is counted in
// [Stats.BadFrees]; it never corrupts memory silently. Nothing in memkit uses
// cgo, go:linkname into the runtime, or build tags to choose a strategy.
//
// # Statistics
//
// Gauges (InUseBytes, ReservedBytes, LiveObjects, and for the range
// allocators extent and buddy FreeBytes and LargestFree, whose ratio
// [Stats.Fragmentation] derives) describe the present; counters (Allocs,
// Frees, HeapFallbacks, Failures, Grows, Releases, BadFrees) only grow.
// ReadStats does not allocate when its *Stats is reused, and allocators keep
// their counters per shard or per cache, never in one word every goroutine
// writes.
package memkit
