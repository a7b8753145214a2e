package slab

import (
	"math/bits"
	"sort"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/internal/shard"
)

// slabRef is an entry of Arena.index.
type slabRef struct {
	base uintptr
	s    *slab
}

// slab is one slab of memory and its chunks' bookkeeping. The fields a
// Shared's lock-free calls read come first, on one cache line on 64-bit
// platforms; none of them changes while the slab is held but open.
type slab struct {
	base   uintptr
	fast   uintptr // see hitSpan
	magic  uint64  // ceil(2^32/size): off/size is off*magic>>32 below fast
	size   uintptr // chunk size, word-sized: a multiply's memory operand
	owner  uint32  // for a Shared's slab, its shard
	chunks []chunk
	open   uintptr // see openSpan
	recip  uint64  // ^uint64(0)/size + 1: off/size is the high word of off*recip

	// For a slab of a Shared's shard in the release build: the idle set
	// of the slab's class, which holds its chunks once they were first
	// handed out, and per chunk its record in the set (see frontChunk);
	// nil otherwise.
	idle  *shard.Idle
	front []frontChunk

	mem        []byte
	cl         *class
	used       int32  // chunks in use
	freeHead   int32  // first free chunk, -1 if none (besides fresh ones)
	fresh      int32  // chunks from fresh on were never handed out
	num        int32  // index in Arena.slabs, which a Loc names
	gen0       uint32 // generation of a chunk never handed out
	prev, next *slab  // links in the class's list of slabs with a free chunk
	listed     bool
	links      []link // chain links by chunk; nil until a chunk of s is chained
}

// openSpan returns how many bytes from the slab's base a Shared's
// lock-free calls may find a chunk in: the bytes its chunks cover, until
// a chunk of the slab is chained, and 0 from then on, so that one compare
// tells those calls both that an address is in a chunk of the slab and
// that the slab is unchained. The load is atomic (a plain one on the
// platforms Go supports): markChained stores 0 while lock-free calls
// read it. A Shared frees chunks of a chained slab under the shard's lock.
func (s *slab) openSpan() uintptr { return atomic.LoadUintptr(&s.open) }

// chained reports whether a chunk of s was ever chained.
func (s *slab) chained() bool { return s.openSpan() == 0 }

// markChained makes the chain links of s, the first time one of its
// chunks is chained.
func (s *slab) markChained() {
	s.links = make([]link, len(s.chunks))
	atomic.StoreUintptr(&s.fast, 0)
	atomic.StoreUintptr(&s.open, 0)
}

// hitSpan is openSpan for the first lookup of a Shared's lock-free calls,
// which divides by the chunk size with a 64-bit multiply and a constant
// shift (see fastSpan): the open span where that quotient is exact, and
// 0 otherwise.
func (s *slab) hitSpan() uintptr { return atomic.LoadUintptr(&s.fast) }

// fastSpan returns the hit span of a slab of c chunks of size bytes, and
// the multiplier m = ceil(2^32/size) that divides by size below it. An
// offset off = i*size + r, r < size, times m is i*(2^32+e) + r*m, where
// e = m*size - 2^32 < size, and r*m <= 2^32+e-m: so off*m>>32 is i
// whenever (i+1)*e < m, for every chunk when c*e < m. Above that (large
// slabs of chunks far from a power of two) the hit span is 0 and the
// lock-free calls take the exact reciprocal of chunkIndex instead. An
// offset is under 2^30 and m at most 2^32, so off*m does not overflow.
func fastSpan(c, size uint32) (span uintptr, m uint64) {
	m = (1<<32 + uint64(size) - 1) / uint64(size)
	if uint64(c)*(m*uint64(size)-1<<32) >= m {
		return 0, m
	}
	return uintptr(c) * uintptr(size), m
}

// chunk is the bookkeeping of one chunk.
type chunk struct {
	refs     int32
	gen      uint32 // incremented at every free
	size     uint32 // bytes requested at Alloc: the capacity handed out
	freeNext int32  // next free chunk while free
}

// setRefs writes ch's reference count. A [Shared]'s DecRef reads counts
// without the shard's lock while other holders of the chunk change them
// under it: a word-sized store cannot tear, and under the race detector the
// store is atomic, so that it sees the lock-free load ordered with it.
func (ch *chunk) setRefs(v int32) {
	if race.Enabled {
		atomic.StoreInt32(&ch.refs, v)
		return
	}
	ch.refs = v
}

// loadRefs reads ch's reference count, as setRefs writes it: under a
// shard's lock of a [Shared], another holder's DecRef may change the count
// without the lock meanwhile, so the load is atomic under the race
// detector, which would report a plain one beside that atomic add.
func (ch *chunk) loadRefs() int32 {
	if race.Enabled {
		return atomic.LoadInt32(&ch.refs)
	}
	return ch.refs
}

// bumpGen counts a free of ch in its generation, which makes every Loc of
// the allocation stale. A [Shared]'s DecRef does it without the lock while
// a stale Loc's lookup may read the generation under it (misuse, which
// must still panic): a word-sized store cannot tear, and under the race
// detector the add is atomic.
func (ch *chunk) bumpGen() {
	if race.Enabled {
		atomic.AddUint32(&ch.gen, 1)
		return
	}
	ch.gen++
}

// loadGen reads ch's generation, as bumpGen writes it.
func (ch *chunk) loadGen() uint32 {
	if race.Enabled {
		return atomic.LoadUint32(&ch.gen)
	}
	return ch.gen
}

// addRefs adds d to ch's reference count and returns the new count: with
// one atomic add in a shard of a Shared, whose holders also change counts
// without the shard's lock, a plain one otherwise.
func (a *Arena) addRefs(ch *chunk, d int32) int32 {
	if a.atomicRefs || race.Enabled {
		return atomic.AddInt32(&ch.refs, d)
	}
	ch.refs += d
	return ch.refs
}

// chunkIndex returns off / s.size, off < 2^32, by a multiplication by the
// reciprocal, never a divide: exact for every chunk size below 2^32
// (when the size is a power of two, recip is 2^64/size exactly).
func (s *slab) chunkIndex(off uint32) uint32 {
	hi, _ := bits.Mul64(uint64(off), s.recip)
	return uint32(hi)
}

// chunkAt returns the bookkeeping of chunk i of s, 0 <= i < len(s.chunks),
// without a bounds check.
func (s *slab) chunkAt(i int32) *chunk {
	return (*chunk)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.chunks)), uintptr(i)*unsafe.Sizeof(chunk{})))
}

// chunkPtr returns the address of the first byte of chunk i of s.
func (s *slab) chunkPtr(i int32) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.mem)), uintptr(i)*uintptr(s.size))
}

// grow adds a slab to class c, at the head of its list, and returns it, or
// nil and the reason: ErrBudget if the budget refused it, ErrNoSpace if
// malloc failed.
func (a *Arena) grow(c int) (*slab, error) {
	if !a.bud.TryCharge(int64(a.slabSize)) {
		return nil, ErrBudget
	}
	mem, err := a.malloc(a.slabSize)
	if err == nil && len(mem) < a.slabSize {
		err = ErrNoSpace
	}
	if err != nil {
		a.bud.Release(int64(a.slabSize))
		return nil, err
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	at := sort.Search(len(a.index), func(i int) bool { return a.index[i].base > base })
	if a.overlaps(at, base) {
		// Not handed to free: the memory is (partly) a live slab's.
		a.bud.Release(int64(a.slabSize))
		return nil, errOverlap
	}
	cl := &a.classes[c]
	var num int32
	if k := len(a.freeNums); k > 0 {
		num = a.freeNums[k-1]
		a.freeNums = a.freeNums[:k-1]
	} else {
		if len(a.slabs) >= int(a.numMask) {
			if a.free != nil {
				a.free(mem)
			}
			a.bud.Release(int64(a.slabSize))
			return nil, ErrNoSpace // no slab number left for a Loc to name
		}
		num = int32(len(a.slabs))
		a.slabs = append(a.slabs, nil)
		a.numGen = append(a.numGen, 0)
	}
	s := &slab{
		mem:      mem,
		base:     base,
		num:      num,
		cl:       cl,
		size:     uintptr(cl.size),
		freeHead: -1,
		gen0:     a.numGen[num],
		recip:    ^uint64(0)/uint64(cl.size) + 1,
		open:     uintptr(cl.perSlab) * uintptr(cl.size),
		chunks:   newChunks(int(cl.perSlab), mem),
	}
	s.fast, s.magic = fastSpan(uint32(cl.perSlab), cl.size)
	a.slabs[num] = s
	a.index = append(a.index, slabRef{})
	copy(a.index[at+1:], a.index[at:])
	a.index[at] = slabRef{s.base, s}
	cl.slabs++
	cl.idle++
	cl.pubSlabs.Store(uint64(cl.slabs))
	cl.grows.Add(1)
	a.pushHead(cl, s)
	if a.onGrow != nil {
		a.onGrow(s, c)
	}
	if checked.Enabled {
		checked.Fill(mem[:a.slabSize], checked.PoisonByte)
	}
	return s, nil
}

// overlaps reports whether a new slab at base, which would go at position
// at of the index, shares a byte with a slab the arena holds: its
// neighbours in the address order are the only candidates, so the check
// is O(1) beside the O(log slabs) search that finds at. A malloc that
// hands out the same memory twice (a pre-carved region that forgot to
// advance) is refused here, instead of giving one chunk to two owners.
func (a *Arena) overlaps(at int, base uintptr) bool {
	size := uintptr(a.slabSize)
	if at > 0 && base-a.index[at-1].base < size {
		return true
	}
	return at < len(a.index) && a.index[at].base-base < size
}

// aliasPad is how many chunk headers make up the 256 bytes that newChunks
// keeps between the header of chunk 0 and the chunk's offset in a page.
const aliasPad = 16

// newChunks returns the bookkeeping of perSlab chunks of the slab mem. A
// program writes to a chunk's bytes just before it hands the chunk back,
// and DecRef then reads the chunk's header first. Slabs are usually
// page-aligned, and so is a large array of headers: the header of chunk 0
// would then sit at the same offset within a 4 KiB page as the chunk's
// first bytes, and the CPU would take the header load for one that may
// depend on the store to the chunk (4K aliasing), stalling it. newChunks
// skips aliasSkip entries of the array so that the header of chunk 0 lies
// at least 256 bytes from that offset, either way.
func newChunks(perSlab int, mem []byte) []chunk {
	c := make([]chunk, perSlab+2*aliasPad)
	rel := (uintptr(unsafe.Pointer(unsafe.SliceData(c))) - uintptr(unsafe.Pointer(unsafe.SliceData(mem)))) % 4096
	skip := aliasSkip(rel)
	return c[skip : skip+perSlab : skip+perSlab]
}

// aliasSkip returns how many headers to skip when the array of headers
// starts rel bytes, modulo 4 KiB, after the slab. A start within 256 bytes
// after the slab's page offset moves up by 256 bytes; one within 256 bytes
// before it moves up by 512, past the offset and 256 bytes beyond.
func aliasSkip(rel uintptr) int {
	const pad = aliasPad * unsafe.Sizeof(chunk{})
	switch {
	case rel < pad:
		return aliasPad
	case rel > 4096-pad:
		return 2 * aliasPad
	}
	return 0
}

// release gives an entirely free slab back.
func (a *Arena) release(s *slab) {
	cl := s.cl
	a.unlist(cl, s)
	cl.slabs--
	cl.idle--
	cl.publish()
	cl.pubSlabs.Store(uint64(cl.slabs))
	cl.releases.Add(1)
	// The next slab with this number starts past every generation a Loc into
	// this one may hold.
	g := s.gen0
	for i := range s.chunks[:s.fresh] {
		g = max(g, s.chunks[i].loadGen())
	}
	a.numGen[s.num] = g + 1
	a.slabs[s.num] = nil
	s.prev, s.next = nil, nil
	a.freeNums = append(a.freeNums, s.num)
	i := sort.Search(len(a.index), func(i int) bool { return a.index[i].base >= s.base })
	copy(a.index[i:], a.index[i+1:])
	a.index[len(a.index)-1] = slabRef{}
	a.index = a.index[:len(a.index)-1]
	if a.last == s {
		a.last = nil
	}
	if a.free != nil {
		a.free(s.mem)
	}
	s.mem = nil
	a.bud.Release(int64(a.slabSize))
}

func (a *Arena) pushHead(cl *class, s *slab) {
	s.prev, s.next, s.listed = nil, cl.head, true
	if cl.head != nil {
		cl.head.prev = s
	} else {
		cl.tail = s
	}
	cl.head = s
}

func (a *Arena) pushTail(cl *class, s *slab) {
	s.prev, s.next, s.listed = cl.tail, nil, true
	if cl.tail != nil {
		cl.tail.next = s
	} else {
		cl.head = s
	}
	cl.tail = s
}

func (a *Arena) unlist(cl *class, s *slab) {
	if !s.listed {
		return
	}
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		cl.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		cl.tail = s.prev
	}
	s.prev, s.next, s.listed = nil, nil, false
}

// slabOf returns the slab holding address p, or nil, and makes it the
// last one looked up.
func (a *Arena) slabOf(p uintptr) *slab {
	if s := a.last; s != nil && p-s.base < uintptr(a.slabSize) {
		return s
	}
	// The last slab whose base is <= p.
	idx := a.index
	lo := sort.Search(len(idx), func(i int) bool { return idx[i].base > p })
	if lo == 0 || p-idx[lo-1].base >= uintptr(a.slabSize) {
		return nil
	}
	s := idx[lo-1].s
	a.last = s
	return s
}

// chunkOf returns the slab and chunk of buf, or nil if buf is not inside
// one chunk of the arena. It makes the slab the last one looked up.
func (a *Arena) chunkOf(buf []byte) (*slab, int32) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	if p == 0 {
		return nil, 0
	}
	s := a.slabOf(p)
	if s == nil {
		return nil, 0
	}
	off := uint32(p - s.base)
	i := s.chunkIndex(off)
	if s.outside(i, off, cap(buf)) {
		return nil, 0
	}
	return s, int32(i)
}

// outside reports whether the n bytes at offset off of s run outside
// chunk i, the chunk whose index chunkIndex(off) gave: the bounds test of
// every lookup of a buffer, small enough to inline.
func (s *slab) outside(i, off uint32, n int) bool {
	return i >= uint32(len(s.chunks)) || uint64(off-i*uint32(s.size))+uint64(n) > uint64(s.size)
}

// mustChunkOf is chunkOf for methods that panic on a foreign buffer.
func (a *Arena) mustChunkOf(buf []byte) (*slab, int32) {
	s, i := a.chunkOf(buf)
	if s == nil {
		panic(msgForeign)
	}
	return s, i
}

// Owns reports whether buf lies inside a chunk of the arena that is
// currently allocated: a buffer returned by Alloc, LocToBuf or GetNext and
// not yet freed, or a re-slice of one. It never panics.
func (a *Arena) Owns(buf []byte) bool {
	s, i := a.chunkOf(buf)
	return s != nil && s.chunks[i].loadRefs() > 0
}

// mustLive returns the slab and chunk of buf, and panics unless buf is a
// live buffer of the arena: with "memkit/slab: use of a free chunk" (a
// StaleHandle report of op in the checked build) for a freed one.
func (a *Arena) mustLive(buf []byte, op string) (*slab, int32) {
	s, i := a.mustChunkOf(buf)
	if s.chunks[i].loadRefs() <= 0 {
		if checked.Enabled {
			a.misuse(op, checked.StaleHandle, s, i, "a buffer of a freed chunk")
		}
		panic(msgFreeChunk)
	}
	return s, i
}
