package slab

import (
	"fmt"
	"io"
	"sync"
	"unsafe"
)

// Chainer is what [ChainWriter] and [ChainReader] need of an arena. Both
// [*Arena] and [*Shared] implement it.
type Chainer interface {
	TryAlloc(n int) ([]byte, error)
	DecRef(buf []byte) bool
	SetNext(buf, next []byte)
	NextLoc(buf []byte) Loc
	NextSpan(buf []byte) (next Loc, off, n int)
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
	cur Loc // the chunk being read
	beg int // where the chain's bytes start in it
	end int // and end
	off int // the next byte to read, from the chunk's start
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
	r.cur, r.beg, r.end, r.off = Loc{}, 0, 0, 0
	if head != nil {
		r.cur = r.a.BufToLoc(head)
		r.beg = int(uintptr(unsafe.Pointer(unsafe.SliceData(head))) - uintptr(unsafe.Pointer(unsafe.SliceData(r.a.LocToBuf(r.cur)))))
		r.end, r.off = r.beg+len(head), r.beg
	}
}

// chunk returns the bytes of the chain in the current chunk.
func (r *ChainReader) chunk() []byte { return r.a.LocToBuf(r.cur)[r.beg:r.end] }

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
		b := r.chunk()
		k := copy(p[n:], b[r.off-r.beg:])
		n += k
		r.off += k
		if r.off == r.end {
			r.next(b)
		}
	}
	return n, nil
}

func (r *ChainReader) next(b []byte) {
	r.cur, r.beg, r.end = r.a.NextSpan(b)
	r.end += r.beg
	r.off = r.beg
}

// WriteTo writes the rest of the chain to w, one Write per chunk, straight
// from slab memory.
func (r *ChainReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for !r.cur.IsNil() {
		b := r.chunk()
		n, err := w.Write(b[r.off-r.beg:])
		total += int64(n)
		r.off += n
		if err != nil {
			return total, err
		}
		if r.off < r.end {
			return total, io.ErrShortWrite
		}
		r.next(b)
	}
	return total, nil
}

// link is the chain bookkeeping of one chunk: its successor, and how many
// of its references are held by chain predecessors (see [Arena.SetNext]).
// A DecRef or LocDecRef may drop only the other references: the chain
// drops its own when the predecessor is freed or relinked, so a DecRef
// that would take the count down to preds is a DecRef too many, caught
// there instead of when the chain is released.
type link struct {
	next   Loc
	off, n uint32 // the bytes of next's chunk that SetNext was given
	preds  int32
}

// spanOf returns where next, a live buffer of the chunk l names, lies in
// the chunk's allocation.
func spanOf(chunk, next []byte) (off, n uint32) {
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(next))) - uintptr(unsafe.Pointer(unsafe.SliceData(chunk)))), uint32(len(next))
}

// freeChain frees chunk i of s and then, iteratively (a chain may be
// long), every successor whose last reference that drops.
func (a *Arena) freeChain(s *slab, i int32) {
	for {
		var next Loc
		if s.links != nil {
			next, s.links[i].next = s.links[i].next, Loc{}
			s.links[i].off, s.links[i].n = 0, 0
		}
		a.putChunk(s, i)
		if next.IsNil() {
			return
		}
		if next.sref()&^a.numMask != a.tag {
			a.handoff = next // in another shard: the Shared releases it
			return
		}
		if s, i = a.unlink(next); s == nil {
			return
		}
	}
}

// unlink drops the reference a chain predecessor held on the chunk next
// names. It returns the chunk if that was its last reference, for the
// caller to free, and nil otherwise. It panics with "memkit/slab: stale
// handle" if next's chunk was freed or holds no chain reference, which a
// DecRef too many of the successor, caught by decRef, cannot cause: the
// check keeps a chunk from going on its free list twice, whatever happened.
func (a *Arena) unlink(next Loc) (*slab, int32) {
	s := a.liveLoc(next)
	if s == nil || s.links == nil || s.links[next.chunk()].preds <= 0 {
		panic(a.staleFree(next))
	}
	i := int32(next.chunk())
	s.links[i].preds--
	ch := &s.chunks[i]
	if a.addRefs(ch, -1) > 0 { // read once, as in decRef
		return nil, 0
	}
	return s, i
}

// unchain drops the chain reference to next, a chunk of this arena, and
// frees it, and its successors in turn, if that was its last reference.
func (a *Arena) unchain(next Loc) {
	if s, i := a.unlink(next); s != nil {
		a.freeChain(s, i)
	}
}

// chainRef adds a chain predecessor's reference to the live chunk nl
// names, for SetNext. It panics like LocAddRef if nl is stale.
func (a *Arena) chainRef(nl Loc) {
	s, i := a.mustLiveLoc(nl)
	a.addRef(&s.chunks[i], msgAddRefFree)
	if s.links == nil {
		s.markChained()
	}
	s.links[i].preds++
}

// SetNext makes next the chain successor of buf's chunk, as go-slab's
// SetNext does: the chunk of buf takes a reference on the chunk of next
// (dropped when buf's chunk is freed or given another successor) and drops
// the one it held on its previous successor. A nil next ends the chain at
// buf. Both buffers must be live buffers of the arena; SetNext panics like
// [Arena.BufToLoc] otherwise. Chains must not form cycles: a cycle keeps
// its chunks alive forever.
func (a *Arena) SetNext(buf, next []byte) {
	a.mustLive(buf, "SetNext")
	var nl Loc
	var off, n uint32
	if next != nil {
		nl = a.BufToLoc(next)
		a.chainRef(nl)
		off, n = spanOf(a.LocToBuf(nl), next)
	}
	if old := a.swapNext(buf, nl, off, n); !old.IsNil() {
		a.unchain(old)
	}
}

// swapNext makes nl (n bytes from off of its chunk) the successor of
// buf's chunk, which must be live, and returns the previous one, whose
// reference the caller must drop.
func (a *Arena) swapNext(buf []byte, nl Loc, off, n uint32) Loc {
	s, i := a.mustLive(buf, "SetNext")
	if s.links == nil {
		if nl.IsNil() {
			return Loc{}
		}
		s.markChained()
	}
	old := s.links[i].next
	s.links[i] = link{next: nl, off: off, n: n, preds: s.links[i].preds}
	return old
}

// takeHandoff returns and clears the successor in another shard that the
// last free left for the Shared arena to release.
func (a *Arena) takeHandoff() Loc {
	h := a.handoff
	a.handoff = Loc{}
	return h
}

// moveHandoff is takeHandoff into *h, and only when there is a successor
// to hand off, which it reports: it never copies a nil Loc.
func (a *Arena) moveHandoff(h *Loc) bool {
	if a.handoff.IsNil() {
		return false
	}
	*h = a.takeHandoff()
	return true
}

// GetNext returns the chain successor of buf's chunk, with its reference
// count incremented (as in go-slab: the caller DecRefs it when done), or
// nil if buf ends its chain. The buffer is the one given to SetNext. It
// panics like [Arena.BufToLoc] if buf is not a live buffer of the arena.
func (a *Arena) GetNext(buf []byte) []byte {
	l, off, n := a.nextSpan(buf, "GetNext")
	if l.IsNil() {
		return nil
	}
	a.LocAddRef(l)
	return a.LocToBuf(l)[off : off+n : off+n]
}

// NextLoc returns the [Loc] of the chain successor of buf's chunk, or the
// nil Loc, without changing any reference count. The successor stays
// valid as long as buf's chunk holds it.
func (a *Arena) NextLoc(buf []byte) Loc { return a.nextLoc(buf, "NextLoc") }

// nextLoc is NextLoc for op, the method whose misuse it reports.
func (a *Arena) nextLoc(buf []byte, op string) Loc {
	l, _, _ := a.nextSpan(buf, op)
	return l
}

// NextSpan is [Arena.NextLoc] with the part of the successor's chunk that
// SetNext was given: n bytes from off of the buffer LocToBuf(next)
// returns. [ChainReader] follows a chain with it.
func (a *Arena) NextSpan(buf []byte) (next Loc, off, n int) {
	l, o, k := a.nextSpan(buf, "NextSpan")
	return l, int(o), int(k)
}

// nextSpan is NextSpan for op, the method whose misuse it reports.
func (a *Arena) nextSpan(buf []byte, op string) (Loc, uint32, uint32) {
	s, i := a.mustLive(buf, op)
	if s.links == nil {
		return Loc{}, 0, 0
	}
	ln := &s.links[i]
	return ln.next, ln.off, ln.n
}
