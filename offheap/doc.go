// Package offheap hands out memory from the operating system (mmap),
// outside the Go heap: large, long-lived buffers that the GC neither scans
// nor counts, each its own mapping, with guard pages that make an overflow
// or a use after free fault at once. Pick it directly for a few big
// buffers (a cache's storage, a memory-mapped table); to carve many small
// or short-lived buffers out of off-heap memory, pick extent or buddy with
// their WithOffHeap option instead: they take their blocks from this
// package and serve each buffer without a system call.
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
//     Freeing twice, freeing memory this package did not map, or another
//     Allocator's mapping, panics with "memkit/offheap: double free or
//     foreign memory"; the mappings are kept in an address-sorted table so
//     the check is a binary search. A slice freed twice after the kernel
//     mapped its address again, for a later Alloc, frees that mapping:
//     guard pages' quarantine keeps freed addresses from being reused.
//
// # Allocators, guard pages and budgets
//
// The package-level functions use [Default], an [Allocator] with no
// options. [New] makes others:
//
//	a, _ := offheap.New(offheap.WithGuardPages(), offheap.WithBudget(1<<30))
//	b, err := a.Alloc(1500) // ends at a page boundary, before a PROT_NONE page
//	...
//	a.Free(b) // protected and quarantined: touching b faults
//
// [WithGuardPages] is the tool for overflows and uses after free: each
// slice ends exactly where a page that cannot be read or written begins,
// and freed mappings are protected rather than unmapped until they leave a
// bounded quarantine, so the first bad access faults at the instruction
// that makes it (Linux; elsewhere the option is ignored, see [GuardPagesAvailable]).
// [WithBudget] bounds the bytes an Allocator has mapped: past it, Alloc
// returns [ErrBudget] (which errors.Is matches with every memkit package's
// ErrBudget) and nothing changes but Stats.Failures. [WithBudgetAlert]
// calls a function when they cross a threshold. Both mean what they mean
// in every memkit package: WithBudget(n) needs n > 0 (leave it out for no
// limit), the alert a threshold > 0, not above the budget, and a function;
// [New] returns an error otherwise.
//
// # Checked build
//
// Built with -tags memkitdebug, every Allocator (Default included) records
// the stack of each Alloc, and a bad Free panics with a *memkit.Misuse
// whose Error names the mistake and the stacks instead of the release
// build's single message: a double free (with the stack of the first
// free), a moved start (a slice that starts inside a mapping: b[1:]), a
// mapping of another Allocator, or memory the package did not map.
// [github.com/memkit/memkit.Leaks] lists an Allocator's live mappings with
// their allocation stacks. Writes after free and past the end are left to
// guard pages, in both builds: the checked build adds no poison, as freed
// memory is unmapped. The checked build adds a stack capture (about a
// microsecond) and an allocation to each Alloc and Free, which are system
// calls already.
//
// # Platforms
//
// On Linux, macOS and the BSDs memory comes from an anonymous private mmap
// and is zeroed by the kernel. [Release] returns pages to the OS with
// madvise: MADV_DONTNEED on Linux, where RSS drops at once and the pages
// read as zero when next touched; MADV_FREE on macOS and the BSDs, where
// the kernel takes the pages when it needs memory (they read as zero once
// taken, and may keep their old contents until then), because their
// MADV_DONTNEED keeps the pages resident. Elsewhere Release only validates
// its argument.
// On other platforms (Windows, Plan 9, js/wasm, WASI) the same API serves
// zeroed memory from the Go heap, so that every program builds; [MmapAvailable]
// reports which is in use.
//
// # Statistics
//
// [ReadStats] reports the process-wide totals in the shared [memkit.Stats];
// [Allocator.ReadStats] those of one Allocator.
package offheap
