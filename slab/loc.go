package slab

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
	slab  uint32 // slab slot + 1; 0 in the nil Loc
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
