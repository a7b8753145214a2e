package slab

import (
	"math"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// AddRef adds a reference to the chunk of buf. It panics with
// "memkit/slab: AddRef of a free chunk" if the chunk is free, and with
// "memkit/slab: buffer not allocated by this arena" if buf is not in a
// chunk of the arena.
func (a *Arena) AddRef(buf []byte) {
	s, i := a.find(buf)
	if checked.Enabled && s.chunks[i].refs <= 0 {
		a.misuse("AddRef", checked.StaleHandle, s, i, "a buffer of a freed chunk")
	}
	a.addRef(&s.chunks[i], msgAddRefFree)
}

func (a *Arena) addRef(ch *chunk, msg string) {
	if ch.refs <= 0 {
		panic(msg)
	}
	if ch.refs == math.MaxInt32 {
		panic(msgRefOverflow)
	}
	ch.refs++
}

// DecRef drops a reference to the chunk of buf and reports whether it was
// the last one. When it was, the chunk is freed, buf and every other
// buffer of the chunk must not be used any more, and the reference the
// chunk held on its chain successor (see [Arena.SetNext]) is dropped in
// turn, so dropping the head of a chain frees the whole chain unless other
// references hold part of it.
//
// DecRef panics with "memkit/slab: DecRef of a free chunk" if the chunk is
// free, and with "memkit/slab: buffer not allocated by this arena" if buf
// is not in a chunk of the arena; both are counted in Stats.BadFrees first.
func (a *Arena) DecRef(buf []byte) bool {
	// The hot path: the last reference to an unchained chunk of the slab
	// of the previous lookup, buf inside it. Everything else, misuse
	// included, goes through decRefBuf, which checks again from scratch.
	s := a.last
	if s == nil || checked.Enabled {
		return a.decRefBuf(buf)
	}
	d := uintptr(unsafe.Pointer(unsafe.SliceData(buf))) - s.base // wraps around for nil
	if d >= uintptr(a.slabSize) {
		return a.decRefBuf(buf)
	}
	i := s.chunkIndex(uint32(d))
	if i >= uint32(len(s.chunks)) || uint64(uint32(d)-i*s.size)+uint64(cap(buf)) > uint64(s.size) {
		return a.decRefBuf(buf)
	}
	ch := s.chunkAt(int32(i))
	if ch.refs != 1 || s.links != nil {
		return a.decRefBuf(buf)
	}
	// pushFree, written out: with its call to slabChanged it is too
	// costly to inline, and a call here is a tenth of the op.
	ch.refs = 0
	ch.gen++
	ch.freeNext = s.freeHead
	s.freeHead = int32(i)
	cl := s.cl
	cl.freed()
	s.used--
	switch {
	case s.used == 0 && cl.tail == s && cl.idle < a.idleSlabs:
		cl.idle++ // empty, kept, and already last in its list
	case s.used == 0 || s.used == cl.perSlab-1:
		a.slabChanged(cl, s)
	}
	return true
}

// decRefBuf is DecRef for every case: it finds the chunk of buf, panics
// if there is none, and drops a reference.
func (a *Arena) decRefBuf(buf []byte) bool {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	s := a.last
	if s == nil || p-s.base >= uintptr(a.slabSize) {
		if s = a.lookup(p); s == nil || p == 0 {
			a.badFrees.Add(1)
			if checked.Enabled {
				a.foreignFree("DecRef", p)
			}
			panic(msgForeign)
		}
	}
	off := uint32(p - s.base)
	i := s.chunkIndex(off)
	if i >= uint32(len(s.chunks)) || uint64(off-i*s.size)+uint64(cap(buf)) > uint64(s.size) {
		a.badFrees.Add(1)
		if checked.Enabled {
			a.foreignFree("DecRef", p)
		}
		panic(msgForeign)
	}
	ch := s.chunkAt(int32(i)) // i < len(s.chunks): checked above
	if ch.refs != 1 || s.links != nil || checked.Enabled {
		return a.decRef(s, int32(i))
	}
	// The last reference to an unchained chunk.
	ch.refs = 0
	ch.gen++
	a.pushFree(s, ch, int32(i))
	return true
}

func (a *Arena) decRef(s *slab, i int32) bool {
	ch := &s.chunks[i]
	if ch.refs <= 0 {
		a.badFrees.Add(1)
		if checked.Enabled {
			a.misuse("DecRef", checked.DoubleFree, s, i, "")
		}
		panic(msgDecRefFree)
	}
	if s.links != nil && ch.refs <= s.links[i].preds {
		a.badFrees.Add(1)
		if checked.Enabled {
			a.chainedMisuse(s, i)
		}
		panic(msgDecRefChained)
	}
	ch.refs--
	if checked.Enabled && s.links != nil && ch.refs > 0 && ch.refs == s.links[i].preds {
		a.noteLastDecRef(s, i)
	}
	if ch.refs > 0 {
		return false
	}
	a.freeChunk(s, i)
	return true
}

// freeChunk puts chunk i of s, whose count just dropped to zero, back, and
// drops the reference it held on its chain successor.
func (a *Arena) freeChunk(s *slab, i int32) {
	if s.links != nil {
		a.freeChain(s, i)
		return
	}
	a.putChunk(s, i)
}

// putChunk pushes chunk i of s on its slab's free list.
func (a *Arena) putChunk(s *slab, i int32) {
	ch := &s.chunks[i]
	ch.gen++
	if checked.Enabled {
		s.cl.frees++
		s.cl.publish()
		a.checkFree(s, i) // and into quarantine
		return
	}
	a.pushFree(s, ch, i)
	s.cl.publish() // a chunk freed off the hot paths: publish exactly
}

// pushFree puts chunk i of s (ch), free now, on its slab's free list and
// keeps the slab's place in its class's list: the release build's end of
// putChunk, and of DecRef's slow path (its hot path writes it out).
func (a *Arena) pushFree(s *slab, ch *chunk, i int32) {
	ch.freeNext = s.freeHead
	s.freeHead = i
	cl := s.cl
	cl.freed()
	s.used--
	switch {
	case s.used == 0 && cl.tail == s && cl.idle < a.idleSlabs:
		cl.idle++ // empty, kept, and already last in its list
	case s.used == 0 || s.used == cl.perSlab-1:
		a.slabChanged(cl, s)
	}
}

// slabChanged moves s, which just stopped being full or became empty, in
// its class's list, and releases it if its class holds enough empty slabs.
func (a *Arena) slabChanged(cl *class, s *slab) {
	if s.used == cl.perSlab-1 {
		a.pushHead(cl, s) // it was full, so unlisted
	}
	if s.used > 0 {
		return
	}
	cl.idle++
	if cl.idle > a.idleSlabs {
		a.release(s)
		return
	}
	if cl.tail != s {
		a.unlist(cl, s)
		a.pushTail(cl, s)
	}
}
