// Package offheap hands out memory from the operating system (mmap),
// outside the Go heap: large, long-lived buffers that the GC neither scans
// nor counts, each its own mapping. Pick it directly for a few big buffers
// that live for minutes (a cache's storage, a memory-mapped table); every
// Alloc and Free is a system call, so for many small or short-lived
// buffers pick extent, buddy or slab with their WithOffHeap option, which
// carve them out of blocks from this package. [New] makes an [Allocator]
// with guard pages that make an overflow or a use after free fault at once,
// or with a budget.
//
//	b, err := offheap.Alloc(64 << 20) // len 64 MiB, from mmap
//	...
//	offheap.Release(b[:32<<20]) // the OS may take these pages back; b stays usable
//	...
//	offheap.Free(b) // unmapped: b must never be touched again
//
// Never store Go pointers (pointers, slices, strings, maps, interfaces,
// funcs, channels) in off-heap memory: the GC does not see them, so what
// they point to may be freed while still referenced. Store bytes, numbers
// and indices. After Free, touching any slice of the mapping faults.
package offheap
