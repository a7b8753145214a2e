// Package buddy is a binary buddy allocator over one region of memory,
// reserved once at a fixed size on the Go heap or off it: for a hard bound
// on the memory a component uses, with power-of-two blocks freed whole and
// merged back with their buddies, so that the region does not fragment
// into pieces no request fits. Pick extent instead for memory that grows
// as needed (up to an optional budget), exact sizes (buddy rounds up to a
// power of two, losing up to half a block) or partial frees; bytepool for buffers whose sizes
// repeat, from the Go heap without a fixed bound; slab for chunks held by
// reference count or handle.
//
// "Block" has buddy's own sense here, fixed by the names [Allocator.MinBlock]
// and [Allocator.BlockSize]: a power-of-two piece of the region, not the
// memory an allocator reserves as it grows (extent's blocks).
//
//	a, _ := buddy.New(64<<20, 64) // a 64 MiB region, blocks from 64 B
//	b, err := a.Alloc(3000)       // len 3000, cap 4096: a power of two
//	...
//	a.Free(b)
//
// # How it works
//
// The region is split into blocks whose sizes are powers of two, from
// minBlock (order 0) to the whole region (the top order). Alloc rounds a
// request up to a power of two, takes the smallest free block of at least
// that order and splits it in halves until it fits; Free puts the block
// back and merges it with its buddy (the other half of the block it came
// from) while the buddy is free too.
//
// Bookkeeping lives outside the region, so a stray write into freed memory
// cannot corrupt the allocator: one state byte per minBlock (free head,
// allocated head of order k, or inside another block), and a doubly linked
// free list per order threaded through two int32 arrays. A 64-bit mask of
// the orders with a free block finds the order to split from in one
// instruction, so Alloc and Free never search: both are O(orders) in the
// worst case, and O(1) in steady state (see below).
//
// # Lazy merging
//
// A strict buddy allocator merges a freed block all the way up, so that an
// Alloc+Free loop on an empty region splits and merges every order on every
// call (gomem's buddy costs about 94 ns there). This one keeps up to 4 free
// blocks of an order unmerged: a freed block whose order has fewer free
// blocks than that is just pushed on its list, and the next Alloc of that
// order pops it. Nothing is lost: free buddies are merged as soon as their
// order holds more, and an Alloc that finds no block large enough first
// merges every free pair in one pass, so Alloc fails only when no free block
// of the size exists even after merging.
//
// # Misuse
//
//   - Alloc(n) with n < 0 panics: "memkit/buddy: negative size".
//   - Free of a block that is already free panics: "memkit/buddy: double free".
//   - Free of memory that does not start a block this allocator handed out
//     (outside the region, inside a block, a slice whose start moved) panics:
//     "memkit/buddy: foreign memory".
//
// Both checks cost one load of the state byte; the panic counts the free in
// Stats.BadFrees first.
//
// What the release build cannot see: a block carries no generation, so a
// second Free through a stale slice after the block went to a new owner
// frees the new owner's block under it (the state byte says "allocated"),
// and writes after free or into the slack land unnoticed. The checked
// build catches all three (below).
//
// # Statistics
//
// [Allocator.ReadStats] may be called from any goroutine while the owner
// uses the allocator (as [github.com/memkit/memkit.Publish] and the
// Prometheus collector do): it reads only figures the owner publishes into
// atomics, never the owner's own state. Every count is exact as of its
// publication: Failures, BadFrees and Releases are published at once (slow
// paths); an order's Allocs, Frees and IdleObjects at every 64th Alloc and
// Free of the order, at the next 16th after a reader asked, and at every
// failed Alloc, Close and [Allocator.PublishStats]. So the per-order counts
// a scraper sees lag the owner by at most 63 calls per order, and nothing
// is estimated; an owner that wants current figures calls PublishStats
// first (a few atomic stores per order). Alloc and Free pay a mask test
// for this, and one out-of-line call every 16 calls per order.
// InUseBytes counts blocks at their rounded size; LargestFree is the
// largest order with a free block, which lazy merging may understate until
// an Alloc needs the pair merged.
//
// # Budget
//
// The region's size is the allocator's budget, fixed at [New], so buddy
// has no WithBudget: an Alloc that no free block can serve, even after
// merging, returns [ErrNoSpace] (the memory source, the region, has nothing
// for the call; errors.Is matches every memkit package's ErrNoSpace) and
// leaves the allocator unchanged but for Stats.Failures; there is no heap
// fallback. [WithBudgetAlert] calls a function when the bytes handed out
// cross a threshold, up and down, for load shedding; its threshold must be
// > 0 and at most the region's size. The bytes change on every Alloc and
// Free, so the alert is evaluated there, at the cost of a plain add and an
// edge test (the Allocator is used by one goroutine at a time), and costs
// nothing without the option but a nil check.
//
// # Checked build
//
// Built with -tags memkitdebug, the allocator also records every block it
// hands out and reports each misuse it finds by panicking with a
// *memkit.Misuse (its Error names the allocator, the operation and the
// mistake, then the stack that allocated the block and, for a block freed
// before, the stack that freed it):
//
//   - a double free, naming the first free, even after the block merged
//     into a larger free one, and a second free after the memory went to a
//     new owner: a freed block waits in a quarantine (checked.QuarantineBytes,
//     4 MiB, or 4096 blocks, and until an Alloc finds no block without it)
//     before it is reused, so the second Free is reported at that call;
//   - a Free of memory outside the region: a foreign free;
//   - a Free of a slice whose start moved into its block (b[1:], b[64:]) or
//     whose capacity grew past it: a moved start, naming the block;
//   - a write after free: freed blocks are filled with a poison pattern,
//     checked when a block leaves the quarantine, when the memory is handed
//     out again and at [github.com/memkit/memkit.Leaks], whichever comes
//     first, and reported with the stacks of the block that held the byte
//     written;
//   - a write past the length: the slack from the length Alloc gave to the
//     end of the block is filled with guard bytes, checked on Free. The
//     check starts at the larger of that length and len(b) of the slice
//     freed, so a block grown by append within its capacity must be freed
//     through the grown slice;
//   - leaks: [github.com/memkit/memkit.Leaks] lists the blocks not freed,
//     with their allocation stacks; Close ends every block.
//
// The region is filled with poison rather than zero at New. A checked
// allocator is far slower: an Alloc and Free cost about 5 µs rather than
// 15 to 30 ns, mostly to capture their two stacks, plus a scan of every
// block handed out and freed, and allocate on every call. Use it in tests
// and staging.
package buddy
