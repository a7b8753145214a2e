// Package bytepool pools []byte buffers in size classes: Get(n) hands out
// a buffer of at least n bytes and Put takes it back for the next Get, so a
// program that keeps making short-lived byte slices of many sizes (reads,
// encodings, copies) stops paying the GC for each. Pick it over a bare
// sync.Pool when sizes vary (one sync.Pool per size is what it does, with
// misuse caught and stats kept), over package buffer when you want plain
// []byte rather than a growable Buffer, writer or reader (buffer draws its
// storage from bytepool), and over package slab when each buffer has one
// owner at a time who gives it back explicitly: slab is for chunks shared
// by several holders under reference counts, addressed by Loc handles. It
// replaces bytedance's mcache, bytebufferpool and libp2p's buffer pool.
//
//	p, _ := bytepool.New()
//	buf := p.Get(n) // len n, cap n rounded up to its class, locked
//	...
//	p.Put(buf)
//
// # Classes
//
// Classes run from MinSize (64 B) to MaxSize (1 MiB) with 4 classes per
// doubling by default (64, 80, 96, 112, 128, 160, ...), so rounding wastes
// under 20%; a class is found in O(1) from the bit length of the size. The
// capacity of every buffer is locked to its class with a three-index slice,
// so append past it reallocates instead of writing into a neighbour.
//
// # Policies
//
// [Elastic] (the default) allocates each buffer from the Go heap on first use
// and keeps returned ones for reuse: what the recent peak of demand needed
// stays, however often the GC runs, and the rest goes back to the GC once
// demand has been lower for a second or two instead of staying pinned
// (golang/go#23199); see Retention.
//
// [Bounded] reserves one region of its budget at New and carves every
// buffer out of it: no per-buffer GC objects, and a hard bound on the
// memory the pool holds. When the region is used up, Get falls back to the
// heap and counts it, and [Pool.TryGet] reports false.
//
// # Concurrency and cost
//
// Every [Pool] is safe for concurrent use, and a buffer got on one
// goroutine may be put back on any other at the same cost.
//
// An Elastic pool keeps its idle buffers in one sync.Pool per class, each
// buffer held as the pointer to its first byte (pointer-shaped, so no
// boxing; Get rebuilds the slice from it and the class size). sync.Pool
// keeps what each P puts in that P's own list, so Get and Put take no lock
// and no atomic instruction: a class lookup (one table load), the sync.Pool Get or Put,
// the capacity and alignment checks, the idle mark, and, for 1 buffer in
// 64, one atomic add to the sampled count. That is within about 10% of
// bytedance's mcache (a bare sync.Pool per class) and costs no allocation.
// A Get that finds the class's sync.Pool empty takes a buffer from the
// class's reserve (a mutex-guarded stack) before it makes one; a new buffer
// costs make's one allocation. (Classes of 256 KiB and more keep their idle
// buffers in the reserve only: see Retention.)
//
// A Bounded pool's buffers live in a region that must stay whole, so it
// cannot hand them to a sync.Pool, which drops what it holds: it hands the
// sync.Pool a ticket per buffer instead (a 16-byte object, see
// internal/shard.Idle), which waits in the buffer's slot while the buffer
// is out. Get is a sync.Pool Get and a store into the slot, Put the region
// checks, the slot's take and a sync.Pool Put: no lock and no locked
// instruction. A ticket the sync.Pool drops at a GC is collected, and a
// cleanup gives its buffer back to the class, so a buffer idle through two
// GCs costs a ticket made again (one allocation), and a Get may fall back
// to the heap (counted) until that GC's cleanups have run, or while one
// buffer of the class per other P is idle in that P's private sync.Pool
// slot. A buffer costs its ticket, the runtime's record of the ticket's
// cleanup and a 16-byte slot, on the Go heap: about 60 bytes, whatever its
// size.
//
// A [Cache] is a per-goroutine front for hot loops: a list per class that
// only its goroutine touches, so Get and Put are a table lookup, a pop or
// push and the idle mark, with no lock, no atomic and no shared write,
// about half a Pool's cost. It refills from and spills to the pool in
// batches, and settles its counts with the pool's then.
//
// # Retention
//
// sync.Pool alone drops what stayed idle through two GC cycles, and a
// program moving large messages runs a GC every few of them, so an Elastic
// pool keeps a reserve per class behind its sync.Pool, and tends it: after
// every GC cycle (a hook shared by all pools, costing no allocation) and,
// while the pool holds idle buffers or has just made one, on a timer once
// every [RetentionPeriod] (1 s, on the monotonic clock), each tending step
// moves every idle buffer of each class's sync.Pool into the reserve. A
// period runs from one of the timer's steps to the next. The rule:
//
//   - A Get takes from the sync.Pool first, then from the reserve, and only
//     then makes a buffer. So the fewest buffers a reserve held at any
//     moment of a period (its low-water mark) were idle through all of it
//     while every Get of it was served.
//   - At the end of each period, each class gives back that many of its
//     reserve's oldest buffers, and the next period begins with the mark at
//     what the reserve then holds. Buffers a step finds idle in the
//     sync.Pool join the reserve without lowering the mark.
//
// So the buffers that the peak of in-use buffers needed in one period stay
// through the next, however many GC cycles pass; once demand falls, the
// buffers it no longer needs are given back within two periods (2 s, and
// the few milliseconds the timer runs late), and the GC frees them at its
// second cycle after that (the first runs their finalizers, which count
// them in Stats.Releases). A pool that is idle has no timer running once
// its reserves are empty, and an unreachable pool is collected with what it
// holds.
//
// What the tending step cannot reach: a sync.Pool Get takes from another
// P only what that P holds in its shared list, not the one buffer in its
// private slot, and a GC cycle that comes before the step after the
// previous one drops what stayed idle through both. So a buffer Get had to
// make is filed into the reserve by the next Put, and a class that lost a
// buffer to the GC (its Releases went past what its reserve gave back: a
// buffer a user never put back counts too) files every Put into its
// reserve, a mutex-guarded stack, until a whole period passes without
// another loss. Classes of 256 KiB and more keep no buffer in a sync.Pool
// at all: their Get and Put take the reserve's mutex (about 75 more
// instructions per Get and Put of 1 MiB, next to microseconds of using the
// buffer), and so the rule reaches every idle buffer of megabytes. A
// [Cache]'s own lists are
// not tended (only its goroutine may touch them): each holds at most a
// magazine per class until the Cache refills, spills or is released, and
// what it spills follows the rule.
//
// # Misuse
//
//   - Get(n) with n < 0 panics: "memkit/bytepool: negative size"; a size
//     the machine cannot serve now (asked of the kernel before anything is
//     reserved, for sizes of 64 MiB and more) panics with "memkit/bytepool:
//     size ... is more than the machine can allocate now", never the
//     runtime's fatal out-of-memory; TryGet reports false.
//   - Put of a buffer whose capacity is no class is dropped and counted in
//     Stats.BadFrees; it is never filed into a class it does not fit.
//   - Put of a re-sliced buffer whose start moved: a Bounded pool drops and
//     counts every one (its region arithmetic knows where each buffer
//     starts). An Elastic pool keeps no per-buffer state: it drops and
//     counts a start that breaks the 16-byte alignment the Go heap gives
//     every buffer of 16 bytes or more, but b[16:] of a 96-byte buffer,
//     whose capacity is the 80-byte class's, is filed into that class. It is
//     memory-safe (the GC keeps the whole buffer alive) while the caller,
//     having given the memory up, does not touch it again.
//   - A second Put of a buffer still idle in the pool panics:
//     "memkit/bytepool: double free". Put writes a mark derived from the
//     buffer's address and a random secret into its first 8 bytes, and Get
//     clears it (so those 8 bytes of a buffer just got are zero, not the
//     previous user's).
//   - What the release build cannot see: a second Put after the buffer was
//     handed out again, to a new user whose bytes replaced the mark, looks
//     like a first, in both policies: the buffer then goes back on a free
//     list while in use (its first 8 bytes take the mark), and a later Get
//     shares it. Nor can a Bounded pool see two Puts of one buffer made by
//     two goroutines at the same instant: both can pass the check of the
//     buffer's slot (a window of a few instructions, between its load and
//     its store), and the buffer is then handed out twice. An Elastic pool
//     also takes foreign memory whose capacity is a class's, aligned as
//     heap buffers are, for its own, and keeps it, unless another memkit
//     allocator owns it (a FixedPool's or Bounded pool's buffer, an extent
//     range, offheap memory): Put panics then.
//     A write after Put lands in the idle buffer, and a write into the slack
//     past the length stays in the buffer (its capacity is locked). The
//     checked build reports all of them.
//
// # Checked build
//
// Built with -tags memkitdebug, a pool records every buffer it hands out
// (its address, the length asked for and the stack of the Get) and turns
// each of these mistakes into a panic whose value, a *memkit.Misuse,
// names the allocator, the operation and the kind of mistake —
// "memkit/bytepool: Put: double free at 0x..." — and prints the stacks
// that explain it:
//
//   - a second Put (Kind DoubleFree, with the stacks of the Get and of the
//     first Put), at the call that makes it, even after the memory would
//     have gone to a new owner: Put fills the buffer with poison and holds
//     it in a quarantine (up to 4 MiB or 4096 buffers per pool, oldest out
//     first) before it can be handed out again;
//   - a Put of memory the pool never handed out (ForeignFree), whatever
//     its capacity;
//   - a Put of a re-sliced buffer whose start or capacity moved (MovedFree,
//     with the stack of the Get of the buffer it belongs to);
//   - a write after Put (UseAfterFree, naming the byte and the stacks of
//     the Get and the Put), found when the buffer leaves the quarantine or,
//     sooner, by memkit.Leaks(p), which checks every buffer held;
//   - a write into the slack past the length Get gave (Overflow): Get fills
//     it with guard bytes (zeros in a zeroing pool) and Put checks them. A
//     buffer grown by append within its capacity is not an overflow if it
//     is put back whole (Put checks from the larger of the length Get gave
//     and len(b)); code that writes up to the capacity and puts back a
//     shorter slice should ask Get for the whole class, Get(p.ClassSize(n)).
//
// memkit.Leaks(p) lists the buffers handed out and not put back, with the
// stacks of their Gets, for a test's cleanup. The checked build is best
// effort in the sense of Go's arena: a write past the capacity, which only
// unsafe code can make, is not seen, and when a Bounded pool's region (or
// an Elastic pool's budget) runs out, the pool empties its quarantine to
// serve the Get, after which a second Put of those buffers may come too
// late to be seen. It costs two stack captures and a map update per Get and
// per Put, and a fill and a scan of the whole buffer: a Get/Put pair takes
// microseconds, hundreds of times slower than in the release build, which
// pays nothing for any of it (the checks are behind a constant). In the
// checked build a Cache passes every call to its pool. Use it in tests and
// staging, not in production.
//
// # Budgets
//
// [WithBudget] is the size of a Bounded pool's region (at most 128 TiB and,
// on Linux, the machine's RAM and swap: New returns an error past either),
// and an optional bound on what an Elastic pool makes and the GC has not
// collected: at the budget a Get falls back to the heap, counted in
// Stats.HeapFallbacks, and TryGet reports false. [WithBudgetAlert] calls
// back when the bytes charged cross a threshold. Both are charged on slow
// paths only: when a buffer is made, a slab taken, or the GC collects a
// buffer; a Get or Put of an idle buffer never touches them. The two
// options follow the rules every memkit package shares: a budget is > 0
// bytes (leave WithBudget out for none), an alert threshold is > 0 and not
// above the budget, and its func is not nil; New returns an error naming
// the option otherwise.
//
// # Statistics
//
// [Pool.ReadStats] reports the shared [memkit.Stats] with a row per class,
// and may be called from any goroutine while others use the pool (it reads
// atomics and a Bounded pool's buffer slots).
//
// Exact: everything of a Bounded pool when no Get or Put runs meanwhile
// (a Get counts itself in its buffer's slot with a plain add, and
// ReadStats sums the slots; while Gets and Puts run, it sees each slot as
// of some recent moment). Every
// slow-path event of an Elastic one (Grows, the buffers made; Releases,
// those the GC collected, counted by a finalizer on each, the class's one
// func, so that it costs no allocation; HeapFallbacks, Failures, BadFrees,
// and the Allocs,
// Frees and bytes of buffers above the largest class); ReservedBytes of
// an Elastic pool (the buffers made and not yet collected, as of the last
// GC); and what Caches count, folded in when they refill, spill or are
// released. [WithExactStats] makes an Elastic pool count every call
// exactly too, at one shared atomic add per call.
//
// Estimated: an Elastic pool's own Get and Put keep no counter that every
// goroutine would write. They count only the buffers whose address, hashed
// with a seed random to each pool, falls in a 1-in-64 sample: +1 when one is handed out, -1 when it comes
// back, so the sampled count is exactly the sampled buffers in use, and
// LiveObjects (and InUseBytes) is that count times 64, never negative. With
// L buffers in use at random addresses its standard deviation is about
// 8·sqrt(L): 80% at L = 100, 8% at 10,000, under 1% past a million (a
// class's heap buffers sit at regular steps, which the hash spreads more
// evenly than chance). Allocs and Frees of those calls are estimated the
// same way, each sampled call counting 64: a workload that recycles a few
// buffers sees them counted far too often or not at all.
package bytepool
