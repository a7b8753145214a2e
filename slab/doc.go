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
// More on fixes over go-slab, typed views, chains, budgets, checked build,
// cost and statistics, concurrency: docs/slab.md in the repository.
package slab
