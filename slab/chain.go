package slab

import (
	"fmt"
	"io"
	"sync"
)

// Chainer is what [ChainWriter] and [ChainReader] need of an arena. Both
// [*Arena] and [*Shared] implement it.
type Chainer interface {
	TryAlloc(n int) ([]byte, error)
	DecRef(buf []byte) bool
	SetNext(buf, next []byte)
	NextLoc(buf []byte) Loc
	BufToLoc(buf []byte) Loc
	LocToBuf(l Loc) []byte
}

var (
	_ Chainer = (*Arena)(nil)
	_ Chainer = (*Shared)(nil)
)

// ChainWriter is an [io.Writer] that streams bytes into a chain of chunks
// of an [Arena], linked with [Arena.SetNext]: a large payload stored as
// chunks that can be read back with a [ChainReader] and replaced one at a
// time without copying the others.
//
// A ChainWriter is not safe for concurrent use; give each goroutine its
// own, on a [Shared] arena if several goroutines build chains at once (an
// [Arena] is for one goroutine at a time). The zero value is not usable:
// create it with [NewChainWriter]. It must not be copied after first use.
// Write costs one copy of the bytes plus an Alloc and a SetNext per chunk
// filled, and never allocates on the Go heap; the chunks' memory is the
// arena's.
type ChainWriter struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	a         Chainer
	chunkSize int
	head      []byte // first chunk, full length; the writer's own reference
	prev      []byte // chunk before cur, full length
	cur       []byte // chunk being filled, full length
	n         int    // bytes written to cur
	size      int64
}

// NewChainWriter returns a writer that fills chunks of chunkSize bytes
// from a. It panics with "memkit/slab: NewChainWriter chunk size 0 must be
// at least 1" (with the size given) if chunkSize < 1, and with
// "memkit/slab: NewChainWriter of a nil arena" if a is nil.
func NewChainWriter(a Chainer, chunkSize int) *ChainWriter {
	mustArena(a, "NewChainWriter")
	if chunkSize < 1 {
		panic(fmt.Sprintf("memkit/slab: NewChainWriter chunk size %d must be at least 1", chunkSize))
	}
	return &ChainWriter{a: a, chunkSize: chunkSize}
}

// mustArena panics unless a is an arena: nil, or a nil *Arena or *Shared,
// would only fail later, inside a Write or Read.
func mustArena(a Chainer, op string) {
	switch x := a.(type) {
	case nil:
	case *Arena:
		if x != nil {
			return
		}
	case *Shared:
		if x != nil {
			return
		}
	default:
		return
	}
	panic("memkit/slab: " + op + " of a nil arena")
}

// Write copies p into the chain, adding chunks as they fill. It returns
// the error of [Arena.TryAlloc] if a chunk cannot be had (chunkSize above
// the slab size, or malloc out of memory), with the bytes written so far.
func (w *ChainWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if w.cur == nil || w.n == len(w.cur) {
			if err := w.grow(); err != nil {
				return written, err
			}
		}
		k := copy(w.cur[w.n:], p)
		w.n += k
		w.size += int64(k)
		written += k
		p = p[k:]
	}
	return written, nil
}

func (w *ChainWriter) grow() error {
	c, err := w.a.TryAlloc(w.chunkSize)
	if err != nil {
		return err
	}
	if w.cur == nil {
		w.head = c
	} else {
		w.a.SetNext(w.cur, c) // the chain holds c now
		w.a.DecRef(c)
		w.prev = w.cur
	}
	w.cur, w.n = c, 0
	return nil
}

// Size returns the number of bytes written.
func (w *ChainWriter) Size() int64 { return w.size }

// Finish ends the chain and returns its head: a buffer holding the first
// chunk's bytes, with one reference that the caller now owns. DecRef of
// the head frees the whole chain; [NewChainReader] reads it. Finish
// returns nil if nothing was written. The writer is empty afterwards and
// may be used for a new chain.
func (w *ChainWriter) Finish() []byte {
	if w.cur == nil {
		return nil
	}
	last := w.cur[:w.n]
	if w.prev != nil {
		w.a.SetNext(w.prev, last) // record the last chunk's true length
	}
	head := w.head
	if w.prev == nil {
		head = last
	}
	*w = ChainWriter{a: w.a, chunkSize: w.chunkSize}
	return head
}

// ChainReader is an [io.Reader] and [io.WriterTo] over a chain of chunks
// of an [Arena], from its head to the chunk whose successor is nil.
//
// A ChainReader is not safe for concurrent use. The zero value is not
// usable: create it with [NewChainReader]. It may not be copied after
// first use. It holds no reference: the chain must stay alive (its head
// referenced) while it is read. It follows the chain by [Loc]s, so a chunk
// freed under it (replaced in the chain) makes it panic with "memkit/slab:
// stale handle" instead of reading reused memory. Read and WriteTo never
// allocate.
type ChainReader struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	a   Chainer
	cur Loc
	off int
}

// NewChainReader returns a reader of the chain that starts at head (an
// empty chain if head is nil). It panics with "memkit/slab:
// NewChainReader of a nil arena" if a is nil.
func NewChainReader(a Chainer, head []byte) *ChainReader {
	mustArena(a, "NewChainReader")
	r := &ChainReader{a: a}
	r.Reset(head)
	return r
}

// Reset makes r read the chain that starts at head, from its beginning.
func (r *ChainReader) Reset(head []byte) {
	r.cur, r.off = Loc{}, 0
	if head != nil {
		r.cur = r.a.BufToLoc(head)
	}
}

// Read copies the next bytes of the chain into p. It returns io.EOF at the
// end of the chain.
func (r *ChainReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if r.cur.IsNil() {
			if n == 0 {
				return 0, io.EOF
			}
			break
		}
		b := r.a.LocToBuf(r.cur)
		k := copy(p[n:], b[r.off:])
		n += k
		r.off += k
		if r.off == len(b) {
			r.next(b)
		}
	}
	return n, nil
}

func (r *ChainReader) next(b []byte) {
	r.cur, r.off = r.a.NextLoc(b), 0
}

// WriteTo writes the rest of the chain to w, one Write per chunk, straight
// from slab memory.
func (r *ChainReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for !r.cur.IsNil() {
		b := r.a.LocToBuf(r.cur)
		n, err := w.Write(b[r.off:])
		total += int64(n)
		r.off += n
		if err != nil {
			return total, err
		}
		if r.off < len(b) {
			return total, io.ErrShortWrite
		}
		r.next(b)
	}
	return total, nil
}
