// Package arena is GC-safe typed arenas in stable Go: Go's experimental
// arena package (GOEXPERIMENT=arenas), with its API and names, so that
// migrating is a change of import path, and without its build flag.
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
// a bug, as with Go's arena package. Under the memkitdebug build tag,
// memory is poisoned when its arena is reset or freed and checked when it
// is handed out again, so that a write after Reset or Free panics with
// "memkit/arena: memory written after its arena was reset or freed" (best
// effort: reads are not detected, and on 32-bit platforms memory of types
// with pointers is not poisoned). Arena objects are parts of chunks, not
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
//   - Options: [WithChunkSize] (small for thousands of concurrent arenas,
//     big for batch jobs), [WithBudget] (a byte limit: [TryNew] and
//     [TryMakeSlice] return [ErrBudget], [New] falls back to the heap) and
//     [WithAccount] (report the memory to a server-wide monitor, which may
//     refuse it); [Arena.ReadStats] gives the bytes in use and reserved.
//   - [Typed] is an arena of one type, whose [Typed.New] is an index bump
//     that inlines: the fastest way to build a tree or a list.
//   - [Pool] is a goroutine-safe pool of arenas: Get one per request, Put
//     it back, and the chunks are reused across requests and goroutines.
//
// # Concurrency
//
// An [Arena] or a [Typed] is for one goroutine at a time, as in Go's arena
// package. The chunk recycling behind them (freed chunks go to a recycler
// per type and chunk size, built on [sync.Pool]) and the [Pool] are safe
// for concurrent use.
//
// # Misuse
//
// A negative length or capacity panics with "memkit/arena: negative
// length", a length greater than the capacity with "memkit/arena: length
// greater than capacity", and any use of an arena after its Free with
// "memkit/arena: use of freed arena". Zero-size types work: their objects
// all share one address, as with new.
package arena
