// Package gomem is a drop-in replacement for the allocator and multi-buffer
// API of github.com/langhuihui/gomem (Monibuca's pkg/util), built on memkit's
// [extent.Allocator] and [buffer.Slice]/[buffer.Reader]: the same package
// name and the names its users call — NewScalableMemoryAllocator with Malloc,
// Free, FreeRest, Borrow, Read, Recycle and Trim; Memory; MemoryReader;
// RecyclableMemory. Pick it to move a gomem program to memkit without
// changing its code; new code should use extent (or extent.Shared across
// goroutines) for exact-size ranges and buffer's Slice and Reader for the
// multi-buffer view, or buddy where power-of-two sizes in one fixed region
// suit better than extent's growing blocks. The other drop-in packages are
// goslab, funnyslab and vikibytepool.
//
// Migrating is a change of import path:
//
//	import "github.com/langhuihui/gomem"                 // before
//	import "github.com/memkit/memkit/compat/gomem"       // after
//
// # Differences from gomem
//
//   - A second Free of the same bytes panics with "memkit/extent: double
//     free" instead of corrupting the free-range tree; Free of memory the
//     allocator does not own still returns false, as in gomem.
//   - A size the machine cannot allocate now is a memkit panic from Malloc
//     and an error from Read, asked of the kernel first, where gomem ended
//     the process with the runtime's fatal out-of-memory. Read takes memory
//     as the bytes arrive (64 KiB, then doubling), not the peer's length up
//     front, and reads exactly n bytes (io.ErrUnexpectedEOF when fewer come)
//     where gomem returned what one Read call gave.
//   - Malloc and FreeRest cost what extent's do: a treap descent or a
//     front-cache hit, and no allocation once warm. Borrow lends the start of
//     one scratch range that grows to the largest size borrowed, so that, as
//     in gomem, borrowing in a loop without Recycle keeps the heap flat; its
//     memory is valid until the next Borrow or Recycle, and a Free of it
//     panics ("memkit/gomem: Free of Borrow memory") instead of letting
//     Malloc hand it out while Borrow still lends it.
//   - Memory.Equal compares bytes however they are cut into buffers (gomem
//     required the same segmentation).
//   - MemoryReader never allocates once created (gomem's allocated on most
//     calls); creating one (Memory.NewReader, NewReadableBuffersFromBytes)
//     allocates it once, and ReadBytes allocates only when the bytes span
//     buffers. Reading past the end returns io.EOF or io.ErrUnexpectedEOF and
//     leaves the position unchanged. Pop, which always panicked, is absent.
//   - The children (GetChildren, MemoryAllocator, Allocator, Block), the
//     Buddy allocator and the build tags (twotree, enable_buddy, disable_rm,
//     enable_mmap) are not provided: the treap and the off-heap blocks are
//     extent's ([extent.WithOffHeap]), the buddy allocator is memkit's buddy
//     package. ScalableMemoryAllocator.Unwrap returns the extent.Allocator for
//     ReadStats, TryMalloc and Close.
//
// As in gomem, an allocator, a Memory and a MemoryReader are for one goroutine
// at a time: Malloc and Free must not run on two goroutines at once.
package gomem
