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
// change of import path, GC-safe (pointers stored in arena objects keep
// their targets alive, as in objects from new) and without the build flag.
//
//	a := arena.NewArena()
//	n := arena.New[Node](a)            // zeroed, like new(Node)
//	s := arena.MakeSlice[int](a, 0, 8) // like make([]int, 0, 8)
//	s = arena.Append(a, s, 1, 2, 3)    // grows in the arena
//	...
//	a.Reset() // free every object at once, keep the memory for the next round
//	a.Free()  // or give the memory up
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
// Misuse panics with a "memkit/arena: " message ("use of freed arena",
// "negative length", ...); the checked build (-tags memkitdebug) also
// reports writes to objects after Reset, Free or Put, with the stacks
// involved. The misuse table in the repository's docs/safety.md lists each
// mistake and what both builds do.
package arena
