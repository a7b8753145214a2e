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
//     double free". An Elastic pool holds no per-buffer state, so it cannot
//     tell; the buffer then lives twice in the pool, which is memory-safe for
//     the GC but lets two users share it.
//
// # Statistics
//
// [Pool.ReadStats] reports the shared [memkit.Stats] with a row per class;
// counters live in the shards (and in Caches until they refill, spill or are
// released), never in one word every goroutine writes.
package bytepool
