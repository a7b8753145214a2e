// Package extent is an exact-size range allocator: it carves byte ranges
// at exactly the size asked for from large blocks it reserves as it grows,
// and takes back any sub-slice of them (a partial free), for buffers whose
// sizes do not repeat (media frames, packets, records) and for parts of one
// buffer released at different times. Pick bytepool instead when sizes
// repeat and a buffer has one owner: its Get and Put cost less, for the
// rounding up to a class that extent avoids; slab for chunks that several
// owners hold by reference count or by handle; buddy for a region fixed at
// its size, which never grows and frees whole blocks only. extent is the
// successor of gomem's ScalableMemoryAllocator (from the Monibuca streaming
// server).
//
//	a, _ := extent.New()
//	frame := a.Malloc(1500)        // len and cap 1500, from a 1 MiB block
//	hdr := a.FreeRest(frame, 40)   // keep 40 bytes, free the other 1460
//	a.Free(hdr[8:24])              // free any sub-slice (partial free)
//	tmp := a.Borrow(512)           // scratch, no bookkeeping, until Recycle
//	a.Recycle()
//
// More on the free-range index, the front cache, blocks, growth, limits and
// Trim, budget, misuse, statistics, checked build, concurrency:
// docs/extent.md in the repository.
package extent
