package extent

import "sync"

// Source is what a [Recyclable] allocates from and frees to: an
// [*Allocator] or a [*Shared].
type Source interface {
	Malloc(n int) []byte
	Free(b []byte)
}

// Recyclable collects allocations to free them all at once with
// [Recyclable.Recycle], gomem's RecyclableMemory: a media frame built from
// several pieces, released in one call when the frame is done.
//
// A Recyclable is not safe for concurrent use; give each batch its own. The
// zero value is not usable: create it with [NewRecyclable]. It must not be
// copied. NextN costs a Malloc plus an append (amortized, no allocation once
// the batch size has been reached before); it keeps one slice header (24
// bytes on 64-bit) per piece, on the Go heap. Memory is the Source's.
type Recyclable struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	src  Source
	bufs [][]byte
}

// NewRecyclable returns an empty batch over src.
func NewRecyclable(src Source) *Recyclable { return &Recyclable{src: src} }

// NextN allocates n bytes from the source and adds them to the batch. The
// memory is valid until Recycle.
func (r *Recyclable) NextN(n int) []byte {
	b := r.src.Malloc(n)
	if len(b) > 0 {
		r.bufs = append(r.bufs, b)
	}
	return b
}

// AddRecycleBytes adds b, memory allocated from the same source, to the
// batch, so that Recycle frees it.
func (r *Recyclable) AddRecycleBytes(b []byte) {
	if len(b) > 0 {
		r.bufs = append(r.bufs, b)
	}
}

// Len returns the number of pieces in the batch.
func (r *Recyclable) Len() int { return len(r.bufs) }

// Recycle frees every piece of the batch to the source and empties it; the
// Recyclable may then be reused. It panics, as the source's Free does, if a
// piece was already freed.
func (r *Recyclable) Recycle() {
	for i, b := range r.bufs {
		r.bufs[i] = nil
		r.src.Free(b)
	}
	r.bufs = r.bufs[:0]
}
