package slab

import (
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// Loc is a handle to a chunk of an [Arena]: go-slab's Loc, in 8 bytes,
// with a generation.
//
// A Loc is one uint64 and holds no Go pointer, so it may be stored in slab
// memory, in off-heap memory or in a large slice or map that the GC need
// not scan (a map[uint64]Loc costs what a map[uint64]uint64 does), and it
// is a plain value that may be copied and compared with ==. [Loc.Uint64]
// and [LocFromUint64] convert it for storage. The zero Loc is the nil Loc
// ([NilLoc], [Loc.IsNil]). Its methods only compute on the value, so a Loc
// may be shared between goroutines freely; using it with an arena follows
// that arena's concurrency rules.
//
// A Loc names a whole allocation: [Arena.LocToBuf] returns the buffer
// [Arena.Alloc] returned, whatever re-slice of it [Arena.BufToLoc] was
// given (go-slab's BufToLoc also lost the offset). Keep an offset and a
// length beside the Loc for part of a chunk; compat/goslab's Loc does.
//
// A Loc records the generation of its chunk at the time it was made. The
// generation changes every time the chunk is freed, so a Loc kept past the
// free of its chunk is stale: [Arena.LocToBuf], [Arena.LocAddRef] and
// [Arena.LocDecRef] detect it in O(1) and panic with "memkit/slab: stale
// handle", even if the chunk was handed out again meanwhile. A Loc keeps
// the low 15 bits of the generation: a stale Loc goes unnoticed only if
// its chunk was freed a multiple of 32768 times since it was made (the
// wrap window; 2^32 when a Loc was 20 bytes).
//
// The 64 bits hold the slab (22 bits: its number + 1, and for a [Shared]
// the shard in the top 8 of them), the chunk's index in the slab (27
// bits) and the generation (15 bits). So an Arena holds at most 2^22-1
// slabs at once and each shard of a Shared 2^14-1; past that, TryAlloc
// returns [ErrNoSpace].
//
// A Loc does not say which arena it belongs to; using it with another arena
// than the one that made it is undetected misuse.
type Loc struct{ v uint64 }

const (
	srefBits  = 22 // slab number + 1, and a Shared's shard above it
	chunkBits = 27 // chunk index: a 1 GiB slab of 8-byte chunks
	genBits   = 64 - srefBits - chunkBits
	srefMask  = 1<<srefBits - 1
	chunkMask = 1<<chunkBits - 1
	genMask   = 1<<genBits - 1

	// A shard of a Shared numbers its slabs in the low shardShift bits
	// of the slab field, its shard number above.
	shardShift = srefBits - 8
)

// makeLoc returns the Loc of chunk i (of generation gen) of the slab sref
// names.
func makeLoc(sref uint32, i int32, gen uint32) Loc {
	return Loc{uint64(sref) | uint64(i)<<srefBits | uint64(gen&genMask)<<(srefBits+chunkBits)}
}

// sref returns the slab field: a.tag | (slab number + 1).
func (l Loc) sref() uint32 { return uint32(l.v & srefMask) }

// chunk returns the chunk index.
func (l Loc) chunk() uint32 { return uint32(l.v >> srefBits & chunkMask) }

// gen returns the low genBits of the chunk's generation.
func (l Loc) gen() uint32 { return uint32(l.v >> (srefBits + chunkBits)) }

// NilLoc returns the nil Loc, the zero value.
func NilLoc() Loc { return Loc{} }

// IsNil reports whether l is the nil Loc.
func (l Loc) IsNil() bool { return l.v == 0 }

// Uint64 returns l as a number, 0 for the nil Loc, for storage in
// pointer-free memory; [LocFromUint64] turns it back.
func (l Loc) Uint64() uint64 { return l.v }

// LocFromUint64 returns the Loc that [Loc.Uint64] returned v for. Any
// other v makes a Loc that the arena's methods reject as stale (or,
// rarely, that names another live chunk: as with any Loc of another
// arena, that is undetected misuse).
func LocFromUint64(v uint64) Loc { return Loc{v} }

// chunkBuf returns the allocation of chunk i of s, as Alloc returned it.
func chunkBuf(s *slab, i int32) []byte {
	return unsafe.Slice((*byte)(s.chunkPtr(i)), s.chunks[i].size)
}

// BufToLoc returns the [Loc] of buf's chunk, which must be a live buffer
// of the arena (or a re-slice of one: the Loc names the whole
// allocation), without changing its reference count. It
// panics with "memkit/slab: buffer not allocated by this arena" for a
// buffer outside the arena and "memkit/slab: use of a free chunk" for a
// free chunk.
func (a *Arena) BufToLoc(buf []byte) Loc {
	s, i := a.mustLive(buf, "BufToLoc")
	return makeLoc(a.tag|(uint32(s.num)+1), i, s.chunks[i].loadGen())
}

// liveLoc returns the slab of l, or nil if l is nil or stale.
func (a *Arena) liveLoc(l Loc) *slab {
	sref := l.sref()
	if sref&^a.numMask != a.tag {
		return nil
	}
	k := int(sref&a.numMask) - 1
	if k < 0 || k >= len(a.slabs) {
		return nil
	}
	s := a.slabs[k]
	if s == nil || int(l.chunk()) >= len(s.chunks) {
		return nil
	}
	if ch := &s.chunks[l.chunk()]; ch.loadGen()&genMask != l.gen() || ch.loadRefs() <= 0 {
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
	return s, int32(l.chunk())
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

// LocToBuf returns the buffer of the allocation l names, as [Arena.Alloc]
// returned it (length and capacity the size requested), or nil for the nil
// Loc. It does not change the reference count. It panics with
// "memkit/slab: stale handle" if the chunk was freed since l was made.
func (a *Arena) LocToBuf(l Loc) []byte {
	if l.IsNil() {
		return nil
	}
	s, i := a.mustLiveLoc(l)
	return chunkBuf(s, i)
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
	return a.decRef(s, int32(l.chunk()))
}
