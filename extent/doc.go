// Package extent is an exact-size range allocator: it carves byte ranges
// at exactly the size asked for from large blocks it reserves as it grows,
// and takes back any sub-slice of them (a partial free), for buffers whose
// sizes do not repeat (media frames, packets, records) and for parts of one
// buffer released at different times. Pick bytepool instead when sizes
// repeat and a buffer has one owner: its Get and Put cost less, for the
// rounding up to a class that extent avoids; slab for chunks that several
// owners hold by reference count or by handle; buddy for a region fixed at
// its size, which never grows and frees whole blocks only. extent is the
// successor of gomem's ScalableMemoryAllocator (from the Monibuca streaming
// server).
//
//	a, _ := extent.New()
//	frame := a.Malloc(1500)        // len and cap 1500, from a 1 MiB block
//	hdr := a.FreeRest(frame, 40)   // keep 40 bytes, free the other 1460
//	a.Free(hdr[8:24])              // free any sub-slice (partial free)
//	tmp := a.Borrow(512)           // scratch, no bookkeeping, until Recycle
//	a.Recycle()
//
// # The free-range index
//
// Free memory is a set of non-overlapping ranges kept in one treap ordered
// by address, where each node also records the largest range in its
// subtree. That one structure does every job the allocator has, each in
// O(log n) expected time for n free ranges:
//
//   - Malloc descends towards the lowest-addressed range that fits
//     (address-ordered first fit), guided by the subtree maxima, so it finds
//     a fitting range whenever one exists: it never grows a new block while
//     one fits (gomem's default search can miss one).
//   - Free finds the ranges just before and after the freed one, merges with
//     them when they touch (within one block), and, from the same two
//     lookups, detects a free that overlaps a free range: a double free is
//     caught whatever its alignment, from the index alone, with no per-byte
//     state.
//   - The root's maximum is the largest free range, for the stats.
//
// Address-ordered first fit was chosen over best fit and size-segregated
// lists because it fragments about as little as best fit in allocation
// studies (Johnstone and Wilson, 1998) while needing only this one index;
// size-segregated lists would need a second, address-ordered index for
// coalescing and the double-free check anyway. A treap rather than an AVL or
// red-black tree because its updates are a few rotations with no balance
// cases, and a range that shrinks or grows in place (the common case: carving
// from the front, merging a neighbour) needs no rotation at all, only the
// maxima on its path, which stop at the first that does not change. Nodes
// sit in one slice linked by int32 index, so the GC has nothing to scan.
//
// # The front cache
//
// The last ranges freed (up to 8) wait outside the index, unmerged, in a
// small front cache, until a Malloc of exactly the size of one takes it back
// with no descent of the treap: a loop that frees and makes allocations of
// a few sizes (a frame, a packet, gomem's 8 KiB benchmark) costs about what
// a sync.Pool Get and Put do. This is the deferred coalescing of the
// allocators of Doug Lea and of tcmalloc's and glibc's per-thread caches,
// kept small and exact:
//
//   - Free checks the freed range against the cached ranges (a scan of at
//     most 8) as well as against the index, so a double or overlapping free
//     is caught the same whether the bytes are free in the index or in the
//     cache.
//   - Cached ranges are free memory in the stats; ReadStats merges them into
//     the index first, so that LargestFree sees them merged with their
//     neighbours.
//   - A cached range is taken back only where first fit would go no lower:
//     when it lies below every range of the index (a lower bound of their
//     starts, kept as ranges are inserted or moved down, answers that in
//     the common case without a descent), or else below the index's first
//     fit. A Malloc that takes none of the cached ranges merges them all into
//     the index before its first-fit search. So the cache changes no
//     placement, and with it no fragmentation: it never makes the allocator
//     grow, nor first fit skip a range that a merge would have made. Trim
//     merges it before looking for free blocks.
//   - When a workload's sizes do not repeat, few cached ranges are taken
//     back (the allocator keeps a score: +8 per range a Malloc took back, -1
//     per range cached). While the score is negative, Free merges the range
//     it frees straight into the index, as without the cache, but for one
//     Free in 16, which caches its range to probe whether that has changed.
//     The cost there is a scan of the cache per Malloc and per Free.
//
// Heap fallback blocks bypass the cache, so that a fallback is dropped as
// soon as it is all free, and so does the checked build.
//
// # Blocks, growth, limits and Trim
//
// Blocks are reserved on demand ([WithBlockSize], [WithGrowth]) from the Go
// heap or, [WithOffHeap], from mmap, and given back with hysteresis, so
// that alternating Malloc and Free (gomem's 8 KiB benchmark, where it costs
// 127 µs and 4 MB per iteration) never releases a block to reserve it
// again:
//
//   - A Free that leaves a block entirely free gives it back if the other
//     blocks still hold the recent peak of bytes in use plus a quarter (the
//     recent peak decays by 1/8192 with every Free and is renewed by every
//     Malloc that passes it) and at least one block stays. So memory
//     reserved for an old peak goes back as the program frees, rather than
//     staying until Trim: with 1,000 live allocations of 64 B–64 KiB, the
//     reserved bytes stay within about 1.45× the live bytes, where keeping
//     every block reached up to 1.6×.
//   - [Allocator.Trim] gives back every entirely free block beyond the peak
//     use since the previous Trim.
//   - Heap fallbacks are dropped as soon as they are all free.
//
// # Budget
//
// [WithBudget] is the allocator's byte budget, as in every memkit package:
// here the bytes of all its blocks together. At the budget, when no free
// range fits a request, Malloc serves it from the Go heap (a block of its
// own, counted in Stats.HeapFallbacks, outside the budget, dropped as soon
// as it is all free) and TryMalloc returns [ErrBudget], leaving the
// allocator unchanged but for Stats.Failures. [WithBudgetAlert] calls a
// function when the bytes reserved cross a threshold, up and down, for
// load shedding; it is evaluated only when a block is reserved or given
// back, so Malloc and Free served from the free ranges pay nothing for it.
//
// # Misuse
//
//   - Malloc(n) and Borrow(n) with n < 0 panic: "memkit/extent: negative
//     size". Malloc(0) returns an empty slice.
//   - Free of a range that is already free or overlaps a free range panics:
//     "memkit/extent: double free".
//   - Free of memory outside every block panics: "memkit/extent: foreign
//     memory".
//
// Both are counted in Stats.BadFrees before the panic. A Free whose start
// moved is no misuse: it frees that part of the allocation (the partial
// free above). Nor is a Free spanning several adjacent allocations of one
// block, which frees them all.
//
// What the release build cannot see, having no per-allocation state: a
// second Free after the range went to a new owner (it frees the new
// owner's bytes under it), a Free running from one allocation into the next
// (it frees both), a Free of Borrow memory, and writes after free or past
// the end. The checked build catches each of them (below).
//
// Sizes the system cannot provide (more than the Go runtime serves, or
// more than the kernel would map now; see internal/sysmem) panic in Malloc
// and Borrow with "memkit/extent: Malloc of n bytes: more than the system
// can provide" and make TryMalloc return an error that errors.Is matches
// with [ErrBudget], rather than let make end the process.
//
// # Statistics
//
// [Allocator.ReadStats] may be called from any goroutine while the owner
// uses the allocator (as [github.com/memkit/memkit.Publish] and the
// Prometheus collector do): it reads only a snapshot the owner publishes
// under a sequence lock, all its fields of one moment, and never touches
// the free-range index. Every figure is exact as of its publication:
// grows, releases, fallbacks, failures, bad frees and the reserved bytes
// are published at once (slow paths); Allocs, Frees and the byte gauges at
// every 64th Malloc and 64th Free, at the next 16th after a reader asked,
// and at Trim, Close and [Allocator.PublishStats]. So a scraper sees them at
// most 63 calls behind, and nothing is estimated; an owner that wants
// current figures calls PublishStats first (it merges the front cache, so
// LargestFree sees merged ranges; otherwise the front cache's ranges count
// unmerged). Malloc and Free pay a mask test for this, and one out-of-line
// call every 16 calls. [Shared.ReadStats] publishes every shard under its
// lock and adds them up: exact.
//
// # Checked build
//
// Built with -tags memkitdebug, the allocator also records every
// allocation and reports each misuse it finds by panicking with a
// *memkit.Misuse (its Error names the allocator, the operation and the
// mistake, then the stack that allocated the memory and, for memory freed
// before, the stack that freed it):
//
//   - a Free of a range with a byte that is free already: a double free,
//     naming the first free, and a second Free after the memory went to a
//     new owner: a freed range waits in a quarantine (checked.QuarantineBytes,
//     4 MiB, or 4096 ranges, and until a Malloc finds no other fit, Trim or
//     Close) before it is reused, so the second Free is reported at that
//     call;
//   - a Free of memory outside the allocator, of Borrow memory, or that
//     reaches from an allocation into the guard bytes after it without
//     freeing the allocation's last byte: a foreign free;
//   - a write after free: freed ranges are filled with a poison pattern,
//     checked when a range leaves the quarantine, when Malloc, TryMalloc or
//     Borrow hands the memory out again (Borrow memory is poisoned by
//     Recycle) and at [github.com/memkit/memkit.Leaks], whichever comes
//     first, and reported with the stacks of the allocation and the free
//     of the bytes written;
//   - a write past the end: each allocation is followed by 16 guard bytes,
//     checked by every Free of any part of it;
//   - leaks: [github.com/memkit/memkit.Leaks] lists the bytes still
//     allocated, with their allocation stacks; Close ends every allocation.
//
// The guard bytes make each allocation take 16 bytes more, counted in
// Stats.InUseBytes, so allocations are no longer adjacent: a spanning Free
// must run from the first allocation's first byte to the last one's last
// byte (it then frees the guard bytes between them too). New blocks are
// filled with poison rather than zero. A checked allocator is far slower:
// a Malloc and Free cost about 5 µs rather than 15 to 30 ns, mostly to
// capture their two stacks, plus a scan of the bytes handed out and freed,
// and allocate on every call. Use it in tests and staging.
//
// # Concurrency
//
// An [Allocator] is for one goroutine at a time, as gomem's is, with no
// locking on its paths. [NewShared] returns a [Shared] allocator that is
// safe for concurrent use and frees from any goroutine: Allocators in
// shards (two per P), each behind a one-word spinlock, the home shard
// picked from the goroutine's stack address (or the next free one when
// another goroutine holds it), so a Malloc and Free cost an Allocator's
// plus a compare-and-swap and an atomic store each; a Free finds the
// owning shard in an index of the shards' blocks. With a budget, an alert
// or the checked build it keeps one shard. [Recyclable]
// (gomem's RecyclableMemory) frees a batch of allocations at once.
package extent
