// Package buddy is a binary buddy allocator over one region of memory,
// reserved once at a fixed size on the Go heap or off it: for a hard bound
// on the memory a component uses, with power-of-two blocks freed whole and
// merged back with their buddies, so that the region does not fragment
// into pieces no request fits. Pick extent instead for memory that grows
// as needed, exact sizes (buddy rounds up to a power of two, losing up to
// half a block) or partial frees; bytepool for buffers whose sizes repeat;
// slab for chunks held by reference count or handle.
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
// Misuse panics with a "memkit/buddy: " message ("double free", "foreign
// memory"); the checked build (-tags memkitdebug) reports more, with the
// stacks involved (see [Allocator]).
package buddy
