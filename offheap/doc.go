// Package offheap hands out memory from the operating system (mmap),
// outside the Go heap.
//
//	b, err := offheap.Alloc(64 << 20) // len 64 MiB, from mmap
//	...
//	offheap.Release(b[:32<<20]) // the OS may take these pages back; b stays usable
//	...
//	offheap.Free(b) // unmapped: b must never be touched again
//
// # When off-heap memory pays
//
// The GC neither scans nor counts memory from this package: GOGC and
// GOMEMLIMIT see none of it, so a large, long-lived cache kept here makes GC
// cycles neither more frequent nor longer. It pays for big buffers that live
// for minutes, not for short-lived ones (a heap buffer from a pool is cheaper
// to get), and every Alloc and Free is a system call (a few microseconds).
//
// # Rules
//
//   - Never store Go pointers (pointers, slices, strings, maps, interfaces,
//     funcs, channels) in off-heap memory: the GC does not see them, so what
//     they point to may be freed while still referenced. Store bytes,
//     numbers and indices only.
//   - After Free, every slice of the mapping is dangling: touching it
//     faults (SIGSEGV), it is not caught by the race detector or the GC.
//   - Free takes the slice as Alloc returned it (any length, same start).
//     Freeing twice, or freeing memory this package did not map, panics with
//     "memkit/offheap: double free or foreign memory"; the mappings are kept
//     in an address-sorted table so the check is a binary search.
//
// # Platforms
//
// On Linux, macOS and the BSDs memory comes from an anonymous private mmap
// and is zeroed by the kernel. [Release] returns pages to the OS with
// madvise(MADV_DONTNEED) on Linux, where RSS drops at once and the pages
// read as zero when next touched; elsewhere it only validates its argument.
// On other platforms (Windows, Plan 9, js/wasm, WASI) the same API serves
// zeroed memory from the Go heap, so that every program builds; [Mapped]
// reports which is in use.
//
// # Statistics
//
// [ReadStats] reports the process-wide totals in the shared [memkit.Stats].
package offheap
