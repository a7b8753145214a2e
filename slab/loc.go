package slab

import (
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// Loc is a handle to a byte range of a chunk of an [Arena]: go-slab's Loc,
// with a generation.
//
// A Loc holds no Go pointer (five 32-bit numbers), so it may be stored in
// slab memory, in off-heap memory or in a large slice that the GC need not
// scan, and it is a plain value that may be copied and compared with ==.
// The zero Loc is the nil Loc ([NilLoc], [Loc.IsNil]). Its methods only
// compute on the value, so a Loc may be shared between goroutines freely;
// using it with an arena follows that arena's concurrency rules.
//
// A Loc records the generation of its chunk at the time it was made. The
// generation changes every time the chunk is freed, so a Loc kept past the
// free of its chunk is stale: [Arena.LocToBuf], [Arena.LocAddRef] and
// [Arena.LocDecRef] detect it in O(1) and panic with "memkit/slab: stale
// handle", even if the chunk was handed out again meanwhile. Generations are
// 32 bits wide: a stale Loc goes unnoticed only if its chunk was freed a
// multiple of 2^32 times since it was made.
//
// A Loc does not say which arena it belongs to; using it with another arena
// than the one that made it is undetected misuse.
type Loc struct {
	slab  uint32 // slab number + 1; 0 in the nil Loc
	chunk uint32 // chunk index in the slab
	gen   uint32 // generation of the chunk when the Loc was made
	off   uint32 // start of the range, from the start of the chunk
	n     uint32 // length of the range
}

// NilLoc returns the nil Loc, the zero value.
func NilLoc() Loc { return Loc{} }

// IsNil reports whether l is the nil Loc.
func (l Loc) IsNil() bool { return l.slab == 0 }

// Len returns the length in bytes of the range l designates.
func (l Loc) Len() int { return int(l.n) }

// Slice returns a Loc for the n bytes from start of the range l designates,
// as go-slab's Loc.Slice does. It does not check the new range against the
// chunk, which a Loc does not know; [Arena.LocToBuf] does, and panics with
// "memkit/slab: Loc range outside its chunk". Slice panics with
// "memkit/slab: negative size" if start or n is negative.
func (l Loc) Slice(start, n int) Loc {
	if start < 0 || n < 0 {
		panic(msgNegative)
	}
	// Saturate, so that no sum wraps around into a range inside the chunk.
	l.off = uint32(min(uint64(l.off)+uint64(start), MaxSlabSize+1))
	l.n = uint32(min(uint64(n), MaxSlabSize+1))
	return l
}

// Loc.slab holds a slab number + 1 in its low numBits bits and, for a
// Shared arena, the shard in the bits above.
const (
	numBits = 24
	numMask = 1<<numBits - 1
)

// chunkBuf returns the bytes [off, off+n) of chunk i of s, with their
// capacity locked to the end of what was allocated.
func chunkBuf(s *slab, i int32, off, n uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(s.chunkPtr(i), off)), s.chunks[i].size-off)[:n]
}

// BufToLoc returns a [Loc] for buf, which must be a live buffer of the
// arena (or a re-slice of one), without changing its reference count. It
// panics with "memkit/slab: buffer not allocated by this arena" for a
// buffer outside the arena and "memkit/slab: use of a free chunk" for a
// free chunk.
func (a *Arena) BufToLoc(buf []byte) Loc {
	s, i := a.mustLive(buf, "BufToLoc")
	ch := &s.chunks[i]
	off := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))) - s.base - uintptr(i)*uintptr(s.size))
	return Loc{slab: a.tag | (uint32(s.num) + 1), chunk: uint32(i), gen: ch.gen, off: off, n: uint32(len(buf))}
}

// liveLoc returns the slab of l, or nil if l is nil or stale.
func (a *Arena) liveLoc(l Loc) *slab {
	if l.slab&^numMask != a.tag {
		return nil
	}
	k := int(l.slab&numMask) - 1
	if k < 0 || k >= len(a.slabs) {
		return nil
	}
	s := a.slabs[k]
	if s == nil || int(l.chunk) >= len(s.chunks) {
		return nil
	}
	if ch := &s.chunks[l.chunk]; ch.gen != l.gen || ch.refs <= 0 {
		return nil
	}
	return s
}

// mustLiveLoc returns the slab and chunk of l, or panics with
// "memkit/slab: stale handle" (a StaleHandle report of the calling method
// in the checked build) if l is stale.
func (a *Arena) mustLiveLoc(l Loc) (*slab, int32) {
	s := a.liveLoc(l)
	if s == nil {
		if checked.Enabled {
			a.staleLoc(callerOp(1), l)
		}
		panic(msgStale)
	}
	return s, int32(l.chunk)
}

// staleFree counts a LocDecRef (or a chain's release) of the stale Loc l
// in Stats.BadFrees and returns what to panic with; the checked build
// panics with its report here.
func (a *Arena) staleFree(l Loc) string {
	a.badFrees.Add(1)
	if checked.Enabled {
		a.staleLoc("LocDecRef", l)
	}
	return msgStale
}

// LocToBuf returns the bytes l designates, as a buffer whose capacity runs
// to the end of what was allocated for the chunk, or nil for the nil Loc.
// It does not change the reference count. It panics with "memkit/slab:
// stale handle" if the chunk was freed since l was made, and with
// "memkit/slab: Loc range outside its chunk" if a [Loc.Slice] took l past
// the end of the allocation.
func (a *Arena) LocToBuf(l Loc) []byte {
	if l.IsNil() {
		return nil
	}
	s, i := a.mustLiveLoc(l)
	if uint64(l.off)+uint64(l.n) > uint64(s.chunks[i].size) {
		panic(msgLocRange)
	}
	return chunkBuf(s, i, l.off, l.n)
}

// LocAddRef is [Arena.AddRef] through a Loc. It panics with "memkit/slab:
// stale handle" if the chunk was freed since l was made, and does nothing
// for the nil Loc.
func (a *Arena) LocAddRef(l Loc) {
	if l.IsNil() {
		return
	}
	s, i := a.mustLiveLoc(l)
	a.addRef(&s.chunks[i], msgAddRefFree)
}

// LocDecRef is [Arena.DecRef] through a Loc: it reports whether the last
// reference was dropped. Unlike DecRef of a buffer, it detects a second
// release after the chunk was handed out again, and panics with
// "memkit/slab: stale handle" (counted in Stats.BadFrees) instead of
// freeing the new owner's chunk. It does nothing for the nil Loc and
// returns false.
func (a *Arena) LocDecRef(l Loc) bool {
	if l.IsNil() {
		return false
	}
	s := a.liveLoc(l)
	if s == nil {
		panic(a.staleFree(l))
	}
	return a.decRef(s, int32(l.chunk))
}
