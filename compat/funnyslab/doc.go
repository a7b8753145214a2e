// Package slab is a drop-in replacement for github.com/funny/slab built on
// memkit's [github.com/memkit/memkit/bytepool]: the same package name, the
// Pool interface, NoPool and the four constructors with their parameters.
// Pick it to move a funny/slab program to memkit without changing its code;
// new code should use bytepool itself, which has the same two kinds of pool
// as its Elastic and Bounded policies, a per-goroutine Cache and stats.
// Despite the name it keeps from funny/slab, it hands out plain buffers,
// without references: for go-slab's refcounted chunks see goslab, on
// memkit's slab package.
//
// Migrating is a change of import path:
//
//	import "github.com/funny/slab"                          // before
//	import slab "github.com/memkit/memkit/compat/funnyslab" // after
//
// Programs that pick the pool by configuration ("sync" | "atom" | "chan" |
// "lock") keep doing so; every pool is a [Pool].
//
// # What each pool is now
//
// NewAtomPool, NewChanPool and NewLockPool reserve, as funny/slab did, a page
// of pageSize bytes per size class up front and carve that class's buffers
// (funny/slab's chunks) out of it; when a class's page is used up, Alloc
// falls back to make.
// All three are now one implementation, a Bounded [bytepool.Pool]: a ticket
// per buffer in a per-P sync.Pool, no lock and no locked instruction per
// Alloc or Free, no allocation once warm; the three locking schemes are gone.
// NewSyncPool is an Elastic bytepool.Pool: buffers from the Go heap, kept for
// reuse and given back to the GC within two seconds once idle, without
// sync.Pool's boxing allocation per Free (funny/slab's SyncPool cost 32 B and
// one allocation per Alloc/Free pair).
//
// # Differences from funny/slab
//
//   - Classes are powers of two from minSize (rounded up to a power of two of
//     at least 8) to maxSize (rounded up to a power of two), for any factor:
//     a factor above 2 gives finer classes than funny/slab's, never coarser.
//     A request above maxSize is served by make, as before.
//   - The pages of all classes form one region (classes × pageSize bytes),
//     taken by classes as they need it: a busy class may use the pages idle
//     classes would have had, so make is needed later than in funny/slab, and
//     never before the region is used up.
//   - A second Free of an Atom, Chan or Lock pool's buffer panics with
//     "memkit/bytepool: double free" instead of handing the buffer to two
//     users; a second Free of a Sync pool's buffer panics while the buffer is
//     still idle. A buffer the pool did not hand out, or one re-sliced past its
//     start, is dropped (counted in Stats.BadFrees), never filed into a class.
//   - Alloc with a negative size panics with "memkit/bytepool: negative size".
//     Alloc of a size the machine cannot allocate now (asked of the kernel
//     first, for 64 MiB or more) panics with "memkit/bytepool: size ... is
//     more than the machine can allocate now ..." (NoPool: "memkit/funnyslab:
//     Alloc of n bytes: more than the system can provide"), where funny/slab
//     ended the process with the runtime's fatal out-of-memory; a maxSize or
//     pageSize past what the machine can hold makes the constructor panic.
//   - Parameters funny/slab accepted and then misbehaved with (minSize above
//     maxSize, a factor below 2, pageSize smaller than maxSize) make the
//     constructor panic with "memkit/funnyslab: " and the bad parameter.
//   - Each pool's Unwrap returns the bytepool.Pool, whose ReadStats reports
//     what funny/slab had no way to see.
package slab
