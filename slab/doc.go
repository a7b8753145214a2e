// Package slab allocates byte buffers as reference-counted chunks of
// slabs, one size class per slab, named by pointer-free handles ([Loc])
// and linked into chains: for payloads that several owners hold and drop
// independently (a message fanned out to many connections, a cache entry
// read while it is replaced), or that are kept by handle in memory the GC
// does not scan. Pick bytepool instead for a buffer with one owner, whose
// Get and Put cost less; extent for sizes that do not repeat, or ranges
// freed in part, which it serves exactly where slab rounds up to a class;
// arena for typed values freed all at once with their arena.
//
// slab is the successor of go-slab, with its names; its constructor returns
// an error and its statistics are memkit's. A go-slab program that should
// compile unchanged imports github.com/memkit/memkit/compat/goslab instead,
// go-slab's exact API on this package.
//
//	a, _ := slab.NewArena(64, 1<<20, 2, nil) // classes 64, 128, ... 1 MiB
//	buf := a.Alloc(100)                      // len 100, cap locked at 100
//	loc := a.BufToLoc(buf)                   // pointer-free handle
//	...
//	a.DecRef(buf)                            // count reaches 0: chunk freed
//	a.LocToBuf(loc)                          // panics: memkit/slab: stale handle
//
// # Fixes over go-slab
//
//   - The capacity of every buffer is locked to the request, so append
//     reallocates instead of writing over the neighbouring chunk.
//   - A [Loc] carries the generation of its chunk: using it after the chunk
//     was freed (even if it was handed out again) panics with
//     "memkit/slab: stale handle" instead of reading or freeing the new
//     owner's data.
//   - A DecRef of a free chunk panics ("memkit/slab: DecRef of a free
//     chunk"); a buffer the arena does not own panics on AddRef, DecRef and
//     the other methods, and [Arena.Owns] reports false for it.
//   - A request larger than the largest class returns nil from
//     [Arena.Alloc] and [ErrTooLarge] from [Arena.TryAlloc].
//   - Slabs that become entirely free are released, after a hysteresis set
//     with [WithIdleSlabs], to the GC or, with [WithFree], to the OS.
//   - [Arena.ReadStats] reports the shared [memkit.Stats] with a row per
//     chunk class, and may be called from any goroutine (by
//     [memkit.Publish], for instance) while the owner uses the arena.
//
// # Typed views
//
// [View] and [ViewSlice] give a typed pointer into a buffer for
// fixed-layout records, and refuse any type that holds a Go pointer
// (strings, slices, maps, pointers, ...), which the GC would not see in
// slab memory. [SetString] and [GetString] store text in fixed-size
// [N]byte fields.
//
// # Chains
//
// [Arena.SetNext] links chunks into chains, as in go-slab: each chunk holds
// a reference on its successor, so dropping the head frees the chain.
// [ChainWriter] streams a large payload into a chain of chunks
// ([io.Writer]) and [ChainReader] reads it back ([io.Reader],
// [io.WriterTo]); one chunk in the middle can be replaced with two
// SetNext calls, without copying the others.
//
// # Budgets
//
// [WithBudget] caps the bytes an arena holds in slabs (a cap > 0; leave
// the option out for none): at the cap, [Arena.Alloc] returns nil and
// [Arena.TryAlloc] returns [ErrBudget], leaving the arena unchanged. [WithBudgetAlert] calls a function when the
// slabs held cross a threshold, up or down, for load shedding. Both are
// evaluated only when a slab is taken or released, never per Alloc or
// DecRef.
//
// # Checked build
//
// Built with the memkitdebug tag (go test -tags memkitdebug ./...), the
// arenas report each mistake below with a panic whose value is an error
// (a *memkit.Misuse) that names the operation and the mistake and
// prints the stack of the chunk's allocation and, where it was freed, of
// its first free; in a release build the same mistakes panic with the
// strings above, or go unnoticed where noted:
//
//   - a double DecRef, even through an old buffer after the chunk could
//     have been handed out again (unnoticed in a release build, which hands
//     the chunk to its next owner at once): a freed chunk waits in a
//     quarantine, the same for every memkit allocator, until more than
//     4096 chunks (or 4 MiB of them) wait after it, before it is handed
//     out again, so a late DecRef finds it free;
//   - a DecRef that would drop the reference a chain holds on its
//     successor (a DecRef too many of a chained chunk), which a release
//     build also catches;
//   - a DecRef of a buffer the arena did not allocate;
//   - a stale handle: a [Loc], or a buffer used with AddRef, BufToLoc,
//     SetNext or GetNext, whose chunk was freed;
//   - a write after free (unnoticed in a release build): a freed chunk is
//     filled with a poison pattern, checked when it leaves the quarantine
//     and by memkit.Leaks, so that a test that makes the mistake and then
//     checks for leaks hears of it;
//   - a write past the end of an allocation into its chunk's slack, with
//     unsafe or a view (unnoticed in a release build; append cannot do it,
//     the capacity is locked): the slack is filled with guard bytes at
//     Alloc, checked at the last DecRef;
//   - leaks: memkit.Leaks lists the chunks allocated and not freed, with
//     the stack of each allocation.
//
// A DecRef through a re-slice of a buffer (buf[k:]) is no mistake: the
// chunk is found from any address inside it. The checks are best effort:
// a late DecRef after the chunk left the quarantine, or a write after free
// that restores the poison, goes unnoticed. The checked build records a
// stack per Alloc and touches every byte of a chunk at Alloc and at its
// last DecRef: Alloc and DecRef cost microseconds instead of nanoseconds,
// and chunks in quarantine keep their slabs.
//
// # Cost and statistics
//
// An [Arena]'s Alloc+DecRef of a chunk takes about 6 ns and no atomic
// instruction; a [Shared]'s takes no lock and no locked instruction either
// once warm (a sync.Pool Get and Put of the chunk's ticket, and a search
// of its slab): about 1.6 times a sync.Pool Get+Put of a buffer. Neither
// allocates once warm.
//
// An Arena counts every Alloc and DecRef exactly, in plain fields only its
// owner touches, and publishes the counts for [Arena.ReadStats] with
// atomic stores: a class's counts at once when a slab of it is taken or
// released, a chunk handed out for the first time, or a chunk freed off
// the hot paths (one that was chained or had more than one reference), and
// every 64 Allocs or DecRefs otherwise. So ReadStats, from any goroutine, reads values the arena had,
// never negative; its per-class Allocs and Frees (and the LiveObjects,
// InUseBytes and IdleObjects derived from them) lag the exact counts by
// fewer than 64 each, and Grows, Releases, ReservedBytes, Failures and
// BadFrees are exact. A Shared's ReadStats reads each shard's counts under
// the shard's lock and the counts of its lock-free paths per chunk: exact
// once its goroutines pause, never above the exact counts while they run.
//
// # Concurrency
//
// An [Arena] is for one goroutine at a time, like go-slab's. [NewShared]
// returns a [Shared] arena with the same methods that any number of
// goroutines may use at once: it carves its chunks in shards, each an
// Arena behind its own lock, and keeps each class's free chunks in a
// per-P set that its Alloc and DecRef reach without a lock, instead of the
// one mutex users wrap go-slab in.
package slab
