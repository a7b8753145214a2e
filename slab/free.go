package slab

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// AddRef adds a reference to the chunk of buf. It panics with
// "memkit/slab: AddRef of a free chunk" if the chunk is free, and with
// "memkit/slab: buffer not allocated by this arena" if buf is not in a
// chunk of the arena.
func (a *Arena) AddRef(buf []byte) {
	s, i := a.mustChunkOf(buf)
	if checked.Enabled && s.chunks[i].loadRefs() <= 0 {
		a.misuse("AddRef", checked.StaleHandle, s, i, "a buffer of a freed chunk")
	}
	a.addRef(&s.chunks[i], msgAddRefFree)
}

func (a *Arena) addRef(ch *chunk, msg string) { a.addRefN(ch, 1, msg) }

// addRefN adds n > 0 references to ch, and panics with msg if it is free
// and with "memkit/slab: reference count overflow" past math.MaxInt32.
func (a *Arena) addRefN(ch *chunk, n int32, msg string) {
	if ch.loadRefs() <= 0 {
		panic(msg)
	}
	if ch.loadRefs() > math.MaxInt32-n {
		panic(msgRefOverflow)
	}
	a.addRefs(ch, n)
}

// AddRefN adds n references to the chunk of buf at once: [Arena.AddRef] n
// times, for a buffer handed to n more holders (one per subscriber of a
// fan-out), each of which DecRefs it once. It panics with "memkit/slab:
// AddRefN count 0 must be at least 1" (with the n given) if n < 1, with
// "memkit/slab: AddRefN of a free chunk" if the chunk is free, with
// "memkit/slab: reference count overflow" if the count would pass
// math.MaxInt32, and like AddRef for a buffer the arena does not own; it
// changes nothing then.
func (a *Arena) AddRefN(buf []byte, n int) {
	mustCount(n)
	s, i := a.mustChunkOf(buf)
	if checked.Enabled && s.chunks[i].loadRefs() <= 0 {
		a.misuse("AddRefN", checked.StaleHandle, s, i, "a buffer of a freed chunk")
	}
	a.addRefN(&s.chunks[i], int32(min(n, math.MaxInt32)), msgAddRefNFree)
}

// mustCount panics unless n, AddRefN's count, is at least 1.
func mustCount(n int) {
	if n < 1 {
		panic(fmt.Sprintf("memkit/slab: AddRefN count %d must be at least 1", n))
	}
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
	// of the previous lookup, buf inside it, freed here with the one call
	// that inlines (pushFree). Everything else, misuse included, goes
	// through decRefSlow, which checks again from scratch.
	s := a.last
	if s == nil || checked.Enabled {
		return a.decRefSlow(buf)
	}
	d := uintptr(unsafe.Pointer(unsafe.SliceData(buf))) - s.base // wraps around for nil
	if d >= uintptr(a.slabSize) {
		return a.decRefSlow(buf)
	}
	i := s.chunkIndex(uint32(d))
	if s.outside(i, uint32(d), cap(buf)) {
		return a.decRefSlow(buf)
	}
	ch := s.chunkAt(int32(i))
	if ch.loadRefs() != 1 || s.links != nil {
		return a.decRefSlow(buf)
	}
	ch.setRefs(0)
	ch.bumpGen()
	s.cl.freed()
	if a.pushFree(s, ch, int32(i)) {
		a.slabChanged(s.cl, s)
	}
	return true
}

// decRefSlow is DecRef off its hot path: it finds the chunk of buf in the
// index of slabs, panics if there is none, and drops a reference.
func (a *Arena) decRefSlow(buf []byte) bool {
	s, i := a.chunkOf(buf)
	if s == nil {
		panic(a.foreignDecRef(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))))
	}
	ch := s.chunkAt(i)
	if ch.loadRefs() != 1 || s.links != nil || s.idle != nil || checked.Enabled {
		return a.decRef(s, i) // a Shared's chunk goes back to its idle set there
	}
	// The last reference to an unchained chunk, as on the hot path.
	ch.setRefs(0)
	ch.bumpGen()
	s.cl.freed()
	if a.pushFree(s, ch, i) {
		a.slabChanged(s.cl, s)
	}
	return true
}

// foreignDecRef counts a DecRef of the buffer at p, in no chunk of the
// arena, in Stats.BadFrees, and returns what to panic with (the checked
// build panics with its report here).
func (a *Arena) foreignDecRef(p uintptr) string {
	a.badFrees.Add(1)
	if checked.Enabled {
		a.foreignFree("DecRef", p)
	}
	return msgForeign
}

func (a *Arena) decRef(s *slab, i int32) bool {
	ch := &s.chunks[i]
	if ch.loadRefs() <= 0 {
		a.badFrees.Add(1)
		if checked.Enabled {
			a.misuse("DecRef", checked.DoubleFree, s, i, "")
		}
		panic(msgDecRefFree)
	}
	if s.links != nil && ch.loadRefs() <= s.links[i].preds {
		a.badFrees.Add(1)
		if checked.Enabled {
			a.chainedMisuse(s, i)
		}
		panic(msgDecRefChained)
	}
	// The count read once: once it is down to one, a Shared's other
	// holder may free the chunk without the lock.
	refs := a.addRefs(ch, -1)
	if checked.Enabled && s.links != nil && refs > 0 && refs == s.links[i].preds {
		a.noteLastDecRef(s, i)
	}
	if refs > 0 {
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
	ch.bumpGen()
	if s.idle != nil && s.toIdle(i) {
		return // a Shared's chunk, idle in its class's set again
	}
	s.cl.frees++
	s.cl.publish() // a chunk freed off the hot paths: publish exactly
	if checked.Enabled {
		a.checkFree(s, i) // and into quarantine, which calls pushFree later
		return
	}
	if a.pushFree(s, ch, i) {
		a.slabChanged(s.cl, s)
	}
}

// pushFree puts chunk i of s (ch), free now, on the slab's free list, and
// reports whether the slab's place in its class's list must change, for
// the caller to call slabChanged: the one free-list push of every free,
// small enough to inline into DecRef. The caller counts the free.
func (a *Arena) pushFree(s *slab, ch *chunk, i int32) (moved bool) {
	ch.freeNext = s.freeHead
	s.freeHead = i
	s.used--
	cl := s.cl
	if s.used == 0 && cl.tail == s && cl.idle < a.idleSlabs {
		cl.idle++ // empty, kept, and already last in its list
		return false
	}
	return s.used == 0 || s.used == cl.perSlab-1
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
