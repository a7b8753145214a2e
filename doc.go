// Package memkit is the root of a toolkit of memory-management tools for Go
// programs that allocate many buffers or objects per second: size-class
// pools, slab arenas, typed arenas, range allocators and off-heap memory,
// each safe by default, measured against the pools Go programs use today,
// and reporting the same statistics.
//
// This package holds no allocator. It names the statistics vocabulary every
// allocator reports in — [Stats], [ClassStats] and [StatsSource], defined in
// the leaf package [github.com/memkit/memkit/stats] — and serves it: [Publish]
// makes an allocator a member of the expvar variable "memkit" and lists it
// on the debug page that [Handler] serves, and
// github.com/memkit/memkit/prom exports it to Prometheus. The allocators import the leaf package, not this one, so a
// program that only allocates links neither net/http nor expvar (importing
// this package links both, and expvar registers /debug/vars on
// http.DefaultServeMux). The allocators live in subpackages:
//
//	package   what                                     goroutine-safe     zeroed        memory
//	bytepool  size-class []byte pool, per-goroutine     Pool yes,          WithZeroing   Go heap
//	          Cache, Elastic and Bounded policies       Cache no
//	slab      refcounted chunks, Loc handles, chains,   Arena no,          no            Go heap, WithOffHeap
//	          typed views for pointer-free records      Shared yes                       or any WithMalloc
//	ringbuf   ring of fixed-size slots                  yes                no            Go heap or given memory
//	extent    exact-size ranges, partial free, Borrow   Allocator no,      no            Go heap or off-heap
//	                                                    Shared yes
//	buddy     buddy allocator over one region           no                 no            Go heap or off-heap
//	kv        byte map whose entries and index the GC   yes                no            off-heap
//	          never scans: Set, Get, View, Delete, Range
//	offheap   mmap'd memory outside the Go heap         yes                yes           off-heap
//	arena     GC-safe typed arenas: New[T], MakeSlice,  Arena, Typed no;   yes           Go heap, typed chunks
//	          Append, Reset; Typed[T]; Pool             Pool yes
//	buffer    pooled Buffer, FixedPool, JSON writer,    Pool, FixedPool    no            Go heap (bytepool)
//	          Slice and zero-copy Reader                yes; the rest no
//
// # Glossary
//
// Each word below means one thing in every package's documentation. Where
// an exported name fixed a word before this glossary (slab's chunks and
// arena's WithChunkSize), the entry says which package uses which sense.
//
//   - buffer: a []byte an allocator hands out and takes back;
//     buffer.Buffer is a growable buffer built on one.
//   - class: a size class, one of the sizes a pool or slab rounds a request
//     up to; each class keeps its own idle buffers or chunks.
//   - region: memory reserved once, at a fixed size, and never grown: a
//     buddy allocator's region, a ringbuf ring's storage, a Bounded pool's
//     region.
//   - block: memory an allocator reserves as it grows and carves into
//     ranges: extent's blocks, offheap's mappings.
//   - slab: a block cut into chunks of one class (slab, and the slabs a
//     Bounded pool cuts its region into).
//   - chunk: in slab, one piece of a slab, handed out as a buffer and
//     counted by references. Elsewhere, the memory a bump allocator bumps
//     through: an arena's chunks (WithChunkSize), the part of a block
//     extent's Borrow bumps through (WithBorrowChunk).
//   - slot: one record's place in a ringbuf ring. No other package uses
//     the word.
//   - handle: a pointer-free value naming an allocation, with a generation
//     that makes a stale one detectable: slab's Loc.
//   - generation: a counter an allocator bumps when it frees a chunk or
//     header, so that a handle or header kept past the free is refused.
//   - shard: one of several independent copies of an allocator's state,
//     each behind its own lock, picked by the calling goroutine's stack
//     address (internal/shard).
//   - Shared: the goroutine-safe, sharded form of a single-goroutine
//     allocator, with the same methods: slab.Shared, extent.Shared.
//   - Arena: slab.Arena is the single-goroutine refcounted chunk allocator;
//     arena.Arena is a typed arena freed all at once. The package name
//     always qualifies the word.
//   - budget: the most bytes an allocator may hold (WithBudget); past it a
//     call fails with ErrBudget or takes its documented fallback.
//   - alert: a callback when the bytes held cross a threshold
//     (WithBudgetAlert), for load shedding before the budget refuses.
//   - heap fallback: a buffer made with make because the allocator could
//     not serve it from its own memory (too large, or past a budget),
//     counted in Stats.HeapFallbacks.
//   - checked build: the program built with -tags memkitdebug, which
//     records stacks, holds freed memory back (quarantine) and reports
//     misuse with the stacks of the calls involved; the release build is
//     the default.
//
// # Safety
//
// Misuse that costs O(1) to detect — a negative size, a double free where
// the allocator keeps a state bit, memory the allocator did not hand out —
// panics with a message prefixed "memkit/<package>: " or is counted in
// [Stats.BadFrees]; it never corrupts memory silently. Nothing in memkit uses
// cgo, go:linkname into the runtime, or build tags to choose a strategy.
package memkit
