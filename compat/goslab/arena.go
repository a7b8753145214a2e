package slab

import (
	"strconv"
	"strings"
	"sync"
	"unsafe"

	mslab "github.com/memkit/memkit/slab"
	"github.com/memkit/memkit/stats"
)

// Loc is a handle to a byte range of a chunk of an Arena, holding no Go
// pointer, as go-slab's Loc: the zero Loc is the nil Loc ([Loc.IsNil]), and
// [Loc.Slice] narrows it. It is memkit's 8-byte [mslab.Loc] of the chunk,
// which records the chunk's generation so that a stale Loc panics instead
// of reaching another owner's bytes, and the range: 16 bytes in all. Its
// methods only compute on the value; it may be compared with ==.
type Loc struct {
	l      mslab.Loc
	off, n uint32 // the range, from the chunk's start
}

// NilLoc returns the nil Loc, the zero value.
func NilLoc() Loc { return Loc{} }

// IsNil reports whether l is the nil Loc.
func (l Loc) IsNil() bool { return l.l.IsNil() }

// Len returns the length in bytes of the range l designates.
func (l Loc) Len() int { return int(l.n) }

// Slice returns a Loc for the n bytes from start of the range l designates,
// as go-slab's Loc.Slice does. It does not check the new range against the
// chunk, which a Loc does not know; [Arena.LocToBuf] does, and panics with
// "memkit/goslab: Loc range outside its chunk". Slice panics with
// "memkit/goslab: negative size" if start or n is negative.
func (l Loc) Slice(start, n int) Loc {
	if start < 0 || n < 0 {
		panic("memkit/goslab: negative size")
	}
	// Saturate, so that no sum wraps around into a range inside the chunk.
	l.off = uint32(min(uint64(l.off)+uint64(start), mslab.MaxSlabSize+1))
	l.n = uint32(min(uint64(n), mslab.MaxSlabSize+1))
	return l
}

// Arena is go-slab's Arena: a slab allocator of reference-counted byte
// chunks in size classes, on memkit's [mslab.Arena].
//
// An Arena is not safe for concurrent use; like go-slab's, guard it with a
// mutex or give each goroutine its own (memkit's [mslab.NewShared] is the
// goroutine-safe arena). The zero value is not usable: create it with
// NewArena. It must not be copied after first use.
//
// Alloc and DecRef cost what memkit's do (a class lookup, a free-list pop or
// push) plus a counter increment for Stats, and never allocate once the
// arena holds a slab of the class. Memory comes in slabs of slabSize bytes
// from malloc (the Go heap when malloc is nil) and is not zeroed.
type Arena struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	a        *mslab.Arena
	slabSize int

	// go-slab's counters that memkit's Stats has no field for. The Arena is
	// for one goroutine at a time, so plain integers do.
	allocs, addRefs, decRefs int64
	decRefZeroes             int64
	getNexts, setNexts       int64
	tooBig, mallocErrs       int64

	st stats.Stats // reused by Stats, so that it allocates only map entries
}

// NewArena returns an arena whose chunk classes start at startChunkSize bytes
// and grow by growthFactor up to slabSize, carved from slabs of slabSize bytes
// obtained from malloc (make when malloc is nil), as go-slab's NewArena.
//
// Chunk classes are rounded up to a multiple of 8 bytes and the last class
// is the slab size: NewArena(10, 1000, 2, nil) has classes 16, 32, ...,
// 512, 1000 where go-slab had 10, 20, ..., 640, 1280. Every request that
// fit still fits; Stats reports the real chunkSize of each class.
//
// It panics with "memkit/goslab: NewArena: " and the reason for parameters
// go-slab accepted and then misbehaved with (a growth factor of 1 or less,
// a start chunk size above the slab size, a non-positive size); go-slab has
// no error result.
func NewArena(startChunkSize, slabSize int, growthFactor float64, malloc func(size int) []byte) *Arena {
	a, err := mslab.NewArena(startChunkSize, slabSize, growthFactor, malloc)
	if err != nil {
		// slab's reason without slab's prefix: the panic is goslab's.
		panic("memkit/goslab: NewArena: " + strings.TrimPrefix(err.Error(), "memkit/slab: "))
	}
	return &Arena{a: a, slabSize: slabSize}
}

// Unwrap returns the memkit arena underneath, for its methods go-slab did
// not have (TryAlloc, ReadStats, ClassSize, NextLoc). Calls made on it are
// not counted in Stats' go-slab counters.
func (s *Arena) Unwrap() *mslab.Arena { return s.a }

// Alloc returns a buffer of length (and capacity) bufLen with a reference
// count of one, or nil if bufLen is larger than the slab size or malloc
// returned no memory, as go-slab's Alloc. It panics with "memkit/slab:
// negative size" if bufLen < 0.
func (s *Arena) Alloc(bufLen int) []byte {
	buf, err := s.a.TryAlloc(bufLen)
	if err != nil {
		if err == mslab.ErrTooLarge {
			s.tooBig++
		} else {
			s.mallocErrs++
		}
		return nil
	}
	s.allocs++
	return buf
}

// Owns reports whether buf is a live buffer of the arena (or a re-slice of
// one). Unlike go-slab's, it reports false for a buffer whose chunk was freed.
func (s *Arena) Owns(buf []byte) bool { return s.a.Owns(buf) }

// AddRef adds a reference to the chunk of buf. It panics with "memkit/slab:
// buffer not allocated by this arena" for a foreign buffer (go-slab panicked
// too) and "memkit/slab: AddRef of a free chunk" for a freed one.
func (s *Arena) AddRef(buf []byte) {
	s.a.AddRef(buf)
	s.addRefs++
}

// DecRef drops a reference to the chunk of buf and reports whether it was
// the last one, which frees the chunk (and drops its reference on its chain
// successor). It panics with "memkit/slab: DecRef of a free chunk" for a
// chunk already free, where go-slab corrupted its free list.
func (s *Arena) DecRef(buf []byte) bool {
	s.decRefs++
	if s.a.DecRef(buf) {
		s.decRefZeroes++
		return true
	}
	return false
}

// GetNext returns the chain successor of buf with its reference count
// incremented (the caller DecRefs it when done), or nil at the end of the
// chain, as go-slab's GetNext.
func (s *Arena) GetNext(buf []byte) []byte {
	s.getNexts++
	return s.a.GetNext(buf)
}

// SetNext makes bufNext the chain successor of buf: buf's chunk takes a
// reference on bufNext's and drops the one it held on its previous
// successor, as go-slab's SetNext. A nil bufNext ends the chain.
func (s *Arena) SetNext(buf, bufNext []byte) {
	s.setNexts++
	s.a.SetNext(buf, bufNext)
}

// BufToLoc returns a Loc for buf without changing its reference count, or the
// nil Loc if buf is nil or not a buffer of the arena, as go-slab's BufToLoc.
// Unlike go-slab, the Loc keeps buf's offset in its chunk (go-slab forced it
// to 0), and a buffer of a freed chunk panics with "memkit/slab: use of a
// free chunk".
func (s *Arena) BufToLoc(buf []byte) Loc {
	if buf == nil {
		return NilLoc()
	}
	if s.a.Owns(buf) {
		return s.locOf(buf, s.a.BufToLoc(buf))
	}
	return s.foreignOrFreed(buf)
}

// locOf returns the Loc of buf, a live buffer of the chunk l names.
func (s *Arena) locOf(buf []byte, l mslab.Loc) Loc {
	chunk := s.a.LocToBuf(l)
	off := uintptr(unsafe.Pointer(unsafe.SliceData(buf))) - uintptr(unsafe.Pointer(unsafe.SliceData(chunk)))
	return Loc{l: l, off: uint32(off), n: uint32(len(buf))}
}

// msgForeign is memkit slab's panic for a buffer outside the arena.
const msgForeign = "memkit/slab: buffer not allocated by this arena"

// foreignOrFreed is BufToLoc of a buffer Owns rejected: the nil Loc if it
// lies outside the arena, memkit's panic if it is a freed chunk's.
func (s *Arena) foreignOrFreed(buf []byte) (l Loc) {
	defer func() {
		if r := recover(); r != nil {
			if r != msgForeign {
				panic(r)
			}
			l = NilLoc()
		}
	}()
	return s.locOf(buf, s.a.BufToLoc(buf))
}

// LocToBuf returns the bytes loc designates (honouring Loc.Slice), with
// their capacity running to the end of the allocation, or nil for the nil
// Loc. It panics with "memkit/slab: stale handle" if the chunk was freed
// since loc was made, and with "memkit/goslab: Loc range outside its
// chunk" if a [Loc.Slice] took loc past the end of the allocation.
func (s *Arena) LocToBuf(loc Loc) []byte {
	if loc.IsNil() {
		return nil
	}
	chunk := s.a.LocToBuf(loc.l)
	if uint64(loc.off)+uint64(loc.n) > uint64(len(chunk)) {
		panic("memkit/goslab: Loc range outside its chunk")
	}
	return chunk[loc.off : loc.off+loc.n]
}

// LocAddRef is AddRef through a Loc; it does nothing for the nil Loc.
func (s *Arena) LocAddRef(loc Loc) {
	if loc.IsNil() {
		return
	}
	s.a.LocAddRef(loc.l)
	s.addRefs++
}

// LocDecRef is DecRef through a Loc; it does nothing for the nil Loc. Unlike
// go-slab's, a stale loc panics with "memkit/slab: stale handle" instead of
// freeing the chunk's next owner.
func (s *Arena) LocDecRef(loc Loc) {
	if loc.IsNil() {
		return
	}
	s.decRefs++
	if s.a.LocDecRef(loc.l) {
		s.decRefZeroes++
	}
}

// Stats adds go-slab's statistics to m (a new map if m is nil) and returns
// it: the counters totSlabClasses, totAllocs, totAddRefs, totDecRefs,
// totDecRefZeroes, totGetNexts, totSetNexts, totMallocs, totMallocErrs,
// totTooBigErrs, totAddSlabErrs, totPushFreeChunks, totPopFreeChunks and
// totPopFreeChunkErrs, and per class i the gauges
// slabClass-%06d-{numSlabs,chunkSize,numChunks,numChunksFree,numChunksInUse}.
//
// totMallocs counts slabs obtained (memkit's Grows), totPopFreeChunks
// chunks allocated (totAllocs) and totPushFreeChunks chunks freed, those of
// a chain freed with its head included. Every class memkit defines is
// listed, from the start, where go-slab added classes as requests needed
// them.
//
// The counters the Arena keeps itself (totAllocs, totPopFreeChunks,
// totAddRefs, totDecRefs, totDecRefZeroes, totGetNexts, totSetNexts,
// totTooBigErrs, totMallocErrs, totAddSlabErrs) and totMallocs and numSlabs
// are exact. totPushFreeChunks and the per-class chunk counts come from
// memkit's [mslab.Arena.ReadStats], which other goroutines may call while
// the arena is in use and which therefore lags the exact counts by less
// than 64 chunks per class. Stats allocates the map's entries; memkit's [mslab.Arena.ReadStats]
// (through Unwrap) does not allocate.
func (s *Arena) Stats(m map[string]int64) map[string]int64 {
	if m == nil {
		m = make(map[string]int64, 14+5*32)
	}
	st := &s.st
	s.a.ReadStats(st)
	m["totSlabClasses"] = int64(len(st.Classes))
	m["totAllocs"] = s.allocs
	m["totAddRefs"] = s.addRefs
	m["totDecRefs"] = s.decRefs
	m["totDecRefZeroes"] = s.decRefZeroes
	m["totGetNexts"] = s.getNexts
	m["totSetNexts"] = s.setNexts
	m["totMallocs"] = int64(st.Grows)
	m["totMallocErrs"] = s.mallocErrs
	m["totTooBigErrs"] = s.tooBig
	m["totAddSlabErrs"] = s.mallocErrs
	m["totPushFreeChunks"] = int64(st.Frees)
	m["totPopFreeChunks"] = s.allocs
	m["totPopFreeChunkErrs"] = 0
	var key [32]byte
	for i, c := range st.Classes {
		p := append(key[:0], "slabClass-"...)
		p = appendIndex(p, i)
		slabs := int64(c.ReservedBytes) / int64(s.slabSize)
		chunks := int64(c.LiveObjects + c.IdleObjects)
		m[string(append(p, "-numSlabs"...))] = slabs
		m[string(append(p, "-chunkSize"...))] = int64(c.Size)
		m[string(append(p, "-numChunks"...))] = chunks
		m[string(append(p, "-numChunksFree"...))] = int64(c.IdleObjects)
		m[string(append(p, "-numChunksInUse"...))] = int64(c.LiveObjects)
	}
	return m
}

// appendIndex appends i as go-slab's %06d does.
func appendIndex(p []byte, i int) []byte {
	for d := 100000; d > 1 && i < d; d /= 10 {
		p = append(p, '0')
	}
	return strconv.AppendInt(p, int64(i), 10)
}
