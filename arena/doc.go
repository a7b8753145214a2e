// Package arena is typed arenas: Go values of any type, pointers included,
// allocated one by one and freed all at once, for work whose objects die
// together (a request's parse tree and messages, a batch's intermediate
// records). Pick it over sync.Pool when the objects are many, of many
// types, and die together: one Reset frees them all, where a pool takes a
// Put per object; pick sync.Pool for one kind of object reused one at a
// time. Pick bytepool or slab when what you allocate is bytes: they hand
// out []byte buffers put back one at a time (bytepool) or by reference
// count (slab), and slab's records are pointer-free, while an arena holds
// typed values the GC scans. It is Go's experimental arena package
// (GOEXPERIMENT=arenas), with its API and names, so that migrating is a
// change of import path, GC-safe and without the build flag.
//
//	a := arena.NewArena()
//	n := arena.New[Node](a)            // zeroed, like new(Node)
//	s := arena.MakeSlice[int](a, 0, 8) // like make([]int, 0, 8)
//	s = arena.Append(a, s, 1, 2, 3)    // grows in the arena
//	...
//	a.Reset() // free every object at once, keep the memory for the next round
//	a.Free()  // or give the memory up
//
// # GC safety
//
// An arena takes its memory from the Go heap in chunks whose layout the GC
// knows: the objects of each type with pointers live in chunks allocated
// as a []T, so a pointer stored in an arena object keeps its target alive
// exactly as it would in an object from new(T); objects of pointer-free
// types share chunks the GC does not scan. Nothing is ever put where the
// GC cannot see it, unlike arenas built on []byte (ortuman/nuke, mm-go), in
// which a stored pointer's target can be collected while still in use. A
// chunk stays alive while any pointer into it does, so a pointer kept past
// Reset or Free still points to valid memory, only memory that another
// object may now use: using an object after its arena is reset or freed is
// a bug, as with Go's arena package, which the checked build reports (see
// below). Arena objects are parts of chunks, not
// heap objects of their own: runtime.SetFinalizer fails fatally on them,
// and a cleanup attached with runtime.AddCleanup runs only when the whole
// chunk is unreachable.
//
// # What the experiment lacks
//
//   - [Arena.Reset] frees every object and keeps the memory for reuse: the
//     pattern of a server arena per request, or one per loop iteration.
//   - [Append] grows a slice in the arena; [CloneString] and [CloneBytes]
//     copy heap data in; [Clone] copies arena data out to the heap.
//   - Options: [WithChunkSize] (the size of the chunks, the memory an arena
//     bumps through: small for thousands of concurrent arenas, big for
//     batch jobs), [WithBudget] (a byte limit: [TryNew] and
//     [TryMakeSlice] return [ErrBudget], [New] falls back to the heap) and
//     [WithAccount] (report the memory to a server-wide monitor, which may
//     refuse it); [Arena.ReadStats] gives the bytes in use and reserved.
//   - [Typed] is an arena of one type, whose [Typed.New] is an index bump
//     that inlines: the fastest way to build a tree or a list.
//   - [Pool] is a goroutine-safe pool of arenas: Get one per request, Put
//     it back, and the chunks are reused across requests and goroutines.
//
// # Budgets
//
// [WithBudget] caps the memory an arena holds: at the cap, TryNew-style
// calls return [ErrBudget] and leave the arena unchanged, and New-style
// calls fall back to the Go heap, counted as HeapFallbacks.
// [WithBudgetAlert] calls a function when the memory an arena holds (or,
// for a [Pool], all its arenas hold) crosses a threshold, up or down, for
// load shedding. Both are evaluated only when an arena takes or gives up a
// chunk, never per object. They mean what they mean in every memkit
// package: WithBudget(n) needs n > 0 (leave it out for no limit), the
// alert a threshold > 0, not above the budget, and a function; the
// constructors panic with a "memkit/arena: " message otherwise, and
// [ErrBudget] matches every memkit package's ErrBudget with errors.Is.
//
// # Checked build
//
// Built with the memkitdebug tag (go test -tags memkitdebug ./...), the
// package reports each mistake below with a panic whose value is an error
// (a *memkit.Misuse) naming the operation and the mistake, with the
// stacks of the allocation and of the free; in a release build they panic
// with the strings below, or go unnoticed where noted:
//
//   - a second Free of an arena or a [Typed] (a double free), and any use
//     of one after its Free;
//   - a [Pool.Put] of an arena not from the pool's Get (a foreign free),
//     and a second Put of an arena (a double free, caught by a state bit
//     in a release build too);
//   - the use of an arena after its Put, before a Get hands it out again
//     (unnoticed in a release build, where the next Get shares it);
//   - a write to an object after its arena's Reset, Free or Put (unnoticed
//     in a release build): the memory objects used is filled with a poison
//     pattern when they are freed, and checked when it is handed out
//     again, in the same arena or, through the shared recycler, another;
//     the report names the Reset, Free or Put that freed it and the
//     allocation that brought its chunk into the arena (the first of the
//     chunk's objects);
//   - leaks: memkit.Leaks of a Pool lists the arenas handed out by Get and
//     neither put back nor freed, with the stack of each Get. A lone arena
//     frees its objects together, so memkit.Leaks of an [Arena] or a
//     [Typed] lists none.
//
// Objects are not freed one by one, so an arena has no double free or
// moved start of an object, and no slack after one to guard: New hands out
// exactly a T and MakeSlice caps its slice at cap. The checks are best
// effort: a read after free is not reported, nor a write to memory not
// handed out again, and on 32-bit platforms memory of types with pointers
// is not poisoned. The checked build fills and checks every byte an arena
// hands out, so New costs two to ten times what it does in a release build
// (more for larger objects) and Reset about twice; a Pool's Get and Put
// record a stack each and cost microseconds.
//
// # Concurrency
//
// An [Arena] or a [Typed] is for one goroutine at a time, as in Go's arena
// package. The chunk recycling behind them (freed chunks go to a recycler
// per type and chunk size, built on [sync.Pool]) and the [Pool] are safe
// for concurrent use. [Arena.ReadStats] and [Typed.ReadStats] may be called
// from any goroutine while the owner uses the arena (as
// [github.com/memkit/memkit.Publish] and the Prometheus collector do): they
// read only a snapshot the owner publishes under a sequence lock, all its
// fields of one moment, never the owner's own state. The owner publishes
// at every chunk it takes, heap fallback and failure (so Grows, Releases,
// ReservedBytes, HeapFallbacks and Failures are always current), at Reset,
// Free and [Pool.Put], at its next slow path after a reader asked, and at
// [Arena.PublishStats]; New and MakeSlice's fast paths pay nothing for
// this. So InUseBytes, LiveObjects and Allocs lag the owner by at most what
// it handed out from its current chunks, one chunk per element type (and
// objects of zero-size types), and nothing is estimated; an owner that
// wants current figures calls PublishStats first.
//
// # Misuse
//
// A negative length or capacity panics with "memkit/arena: negative
// length", a length greater than the capacity with "memkit/arena: length
// greater than capacity", any use of an arena after its Free with
// "memkit/arena: use of freed arena", a Put of an arena to another pool
// with "memkit/arena: Put of an arena not from this pool" and a second Put
// with "memkit/arena: Put of an arena already in the pool". Zero-size types work: their objects
// all share one address, as with new.
package arena
