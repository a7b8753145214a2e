// Package bytepool is a pool of []byte buffers in size classes, the pool to
// use where programs reach for sync.Pool, bytedance's mcache,
// bytebufferpool or libp2p's buffer pool.
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
// and keeps returned ones for reuse. After every GC cycle idle buffers age
// by one generation and those idle for two are dropped, so memory kept after
// a burst goes back to the GC within about three cycles instead of staying
// pinned (golang/go#23199).
//
// [Bounded] reserves one region of its budget at New and carves every
// buffer out of it: no per-buffer GC objects, a hard bound on the memory
// the pool holds, and an O(1) double-free check (one bit per buffer). When
// the region is used up, Get falls back to the heap and counts it, and
// [Pool.TryGet] reports false.
//
// # Concurrency and cost
//
// A [Pool] spreads its free lists over shards (8 per P by default) and a
// goroutine picks its shard by a hash of its own stack address, so the
// goroutines running at one moment rarely meet, and a goroutine keeps
// hitting the same cache-warm shard. A shard is a one-word spinlock and a
// stack per class: Get and Put are one uncontended compare-and-swap each,
// with no sync.Pool, no interface boxing and no allocation. If its shard is
// busy, a goroutine takes the next free one rather than wait. Shards refill
// from and spill to a per-class depot in batches. A buffer Put by another
// goroutine than the one that got it costs the same.
//
// A [Cache] is a per-goroutine front with no atomics at all (one atomic bit
// flip per Put in a Bounded pool) for hot loops; it refills and spills in
// batches too.
//
// # Misuse
//
//   - Get(n) with n < 0 panics: "memkit/bytepool: negative size".
//   - Put of a buffer whose capacity is no class, or (Bounded) that does not
//     start a buffer of the region, is dropped and counted in
//     Stats.BadFrees; it is never filed into a class it does not fit.
//   - A second Put of a Bounded pool's buffer panics: "memkit/bytepool:
//     double free". So does an Elastic pool's while the buffer is still
//     idle: Put writes a mark derived from the buffer's address and a random
//     secret into its first 8 bytes, and Get clears it (so those 8 bytes of
//     a buffer just got are zero, not the previous user's). An Elastic pool
//     holds no other per-buffer state, so a second Put after the buffer was
//     handed out again, to a new user whose bytes replaced the mark, cannot
//     be told from a first: the buffer then lives in the pool while in use,
//     which is memory-safe for the GC but lets two users share it. The
//     checked build catches that one too.
//   - An Elastic pool cannot tell either a buffer it never handed out, or one
//     re-sliced past its start, from its own when the capacity is a class's:
//     it keeps it. That is memory-safe while the caller, having given the
//     memory up, does not touch it again.
//
// # Checked build
//
// Built with -tags memkitdebug, a pool records every buffer it hands out
// (its address, the length asked for and the stack of the Get) and turns
// each of these mistakes into a panic whose value, an error (memkit's
// internal checked.Misuse), names the allocator, the operation and the
// kind of mistake — "memkit/bytepool: Put: double free at 0x..." — and
// prints the stacks that explain it:
//
//   - a second Put (Kind DoubleFree, in every policy, with the stacks of the
//     Get and of the first Put);
//   - a Put of memory the pool never handed out (ForeignFree), whatever
//     its capacity;
//   - a Put of a re-sliced buffer whose start or capacity moved (MovedFree,
//     with the stack of the Get of the buffer it belongs to);
//   - a write after Put (UseAfterFree): Put fills the whole capacity with
//     poison, and Get checks it is intact before handing the buffer out
//     again, naming the byte and the stacks of the previous owner's Get and
//     Put;
//   - a write into the slack past the length Get gave (Overflow): Get fills
//     it with guard bytes (zeros in a zeroing pool) and Put checks them. A
//     buffer grown by append within its capacity is not an overflow if it
//     is put back whole (Put checks from the larger of the length Get gave
//     and len(b)); code that writes up to the capacity and puts back a
//     shorter slice should ask Get for the whole class, Get(p.ClassSize(n)).
//
// memkit.Leaks(p) lists the buffers handed out and not put back, with the
// stacks of their Gets, for a test's cleanup. The checked build is best
// effort in the sense of Go's arena: a write after Put is seen only when
// the buffer is handed out again, and a write past the capacity, which only
// unsafe code can make, is not seen. It costs two stack captures and a
// map update per Get and per Put, and a fill and a scan of the whole
// buffer: a Get/Put pair takes microseconds instead of nanoseconds,
// hundreds of times slower than in the release build, which pays nothing
// for any of it (the checks are behind a constant). Use it in tests and
// staging, not in production.
//
// # Budgets
//
// [WithBudget] is the size of a Bounded pool's region, and an optional
// bound on what an Elastic pool makes and keeps: at the budget a Get falls
// back to the heap, counted in Stats.HeapFallbacks, and TryGet reports
// false. [WithBudgetAlert] calls back when the bytes charged cross a
// threshold. Both are charged on slow paths only: a Get or Put served from
// a shard or a Cache never touches them.
//
// # Statistics
//
// [Pool.ReadStats] reports the shared [memkit.Stats] with a row per class;
// counters live in the shards (and in Caches until they refill, spill or are
// released), never in one word every goroutine writes.
package bytepool
