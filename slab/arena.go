package slab

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/stats"
)

// Arena is a slab allocator of reference-counted byte chunks in size
// classes, with pointer-free [Loc] handles and chains: go-slab's Arena with
// the same methods and names, made safe against the misuse go-slab lets
// through.
//
// An Arena is not safe for concurrent use; give each goroutine its own, or
// use [NewShared] for one arena that many goroutines share. The zero value
// is not usable: an Arena must be created with [NewArena]. An Arena must not
// be copied after first use.
//
// Chunk sizes start at startChunkSize and grow by growthFactor up to the
// slab size; every chunk of a slab has the size of its class. [Arena.Alloc]
// and [Arena.DecRef] cost a table load, a free-list pop or push and a few
// stores each, never allocate once the arena holds a slab of the class, and
// never touch the chunk's bytes. Finding the chunk of a buffer (a shift for
// a power-of-two class size, a multiplication otherwise) is O(1) when
// it lies in the same slab as the previous one, O(log slabs) otherwise;
// handles ([Loc]) are resolved in O(1).
//
// Memory comes in slabs of slabSize bytes from malloc (the Go heap when
// malloc is nil; off-heap memory plugs in here). Slab memory holds only
// the bytes callers write: the arena keeps its bookkeeping (16 bytes per
// chunk and 256 per slab, plus 24 per chunk of a slab once a chunk of it
// is chained with [Arena.SetNext]) on the Go heap beside it, so slab memory is never
// scanned by the GC. Requests are rounded up to their class, so at most a
// factor of growthFactor (plus 8 bytes of alignment) is lost per chunk.
// Memory is not zeroed: a chunk holds what its previous user wrote (or
// whatever malloc returned).
//
// A slab whose chunks are all free is released (to the GC, or to the
// function set with [WithFree]) once its class already holds
// [WithIdleSlabs] entirely free slabs (default 1), so memory kept after a
// burst goes back instead of staying pinned as it does in go-slab.
//
// # Buffers
//
// Every buffer the arena hands out has its capacity locked to the length
// requested, so append past it reallocates on the Go heap instead of
// running over a neighbouring chunk. A buffer stays valid until the
// reference count of its chunk drops to zero; after that its memory may be
// handed out again.
//
// AddRef, DecRef, SetNext, GetNext and BufToLoc accept a buffer returned by
// Alloc, LocToBuf or GetNext, or any re-slice of one that stays inside its
// chunk. A buffer the arena does not own makes them panic with
// "memkit/slab: buffer not allocated by this arena" (and [Arena.Owns]
// report false); a DecRef of a chunk already free panics with
// "memkit/slab: DecRef of a free chunk". A []byte carries no generation, so
// a DecRef through an old buffer after its chunk was handed out again
// cannot be told from the new owner's: where a buffer's lifetime is not
// obvious, keep a [Loc] instead, which detects it, and run tests in the
// checked build (see the package doc), which catches it.
type Arena struct {
	classes   []class
	tab       []uint16 // class of n, indexed by (n+7)>>3, n <= tabMax
	tabMax    int
	slabSize  int
	malloc    func(int) []byte
	free      func([]byte)
	idleSlabs int

	slabs     []*slab  // by slot; nil for a free slot
	slotGen   []uint32 // by slot: generation the next slab in the slot starts at
	freeSlots []int32
	index     []slabRef // live slabs by base address, for buffer lookup
	last      *slab     // slab of the last buffer looked up or handed out

	// Published for ReadStats, which any goroutine may call: changed only
	// on slow paths.
	failures atomic.Uint64
	badFrees atomic.Uint64
	allocErr error // why the last Alloc that failed did, for a Shared

	// For a shard of a Shared arena: tag is the shard's number in the
	// high bits of Loc.slab, and handoff the chain successor in another
	// shard whose reference a free dropped, for the Shared to release.
	tag     uint32
	handoff Loc
	// For a shard: where to publish the base of last (0 for none), so that
	// a Shared's DecRef can guess the shard of a buffer without a lock.
	lastBase *atomic.Uintptr

	// The budget and alert of WithBudget and WithBudgetAlert, charged when
	// a slab is taken or released; nil for none.
	bud *budget.Budget

	// The checked build's state (-tags memkitdebug); nil otherwise.
	chk *arenaChecked
}

// Loc.slab holds a slab slot + 1 in its low slotBits bits and, for a
// Shared arena, the shard in the bits above.
const (
	slotBits = 24
	slotMask = 1<<slotBits - 1
)

// slabRef is an entry of Arena.index.
type slabRef struct {
	base uintptr
	s    *slab
}

// class is one chunk size class.
type class struct {
	size    uint32 // chunk size
	perSlab int32  // chunks per slab
	// Slabs with a free chunk, as a list of slots: slabs that became
	// non-full go to the head, slabs that became empty to the tail, and
	// Alloc takes from the head, so that empty slabs stay empty and can be
	// released.
	head, tail *slab
	slabs      int // slabs of this class
	idle       int // slabs of this class with no chunk in use

	// The owner's exact counts of Alloc and DecRef, plain: the hot paths
	// bump them without an atomic instruction.
	allocs, frees uint64

	// What ReadStats reads, from any goroutine: allocs and frees as the
	// owner last published them (see publish), and the slow-path counts.
	pubAllocs, pubFrees       atomic.Uint64
	pubSlabs, grows, releases atomic.Uint64
}

// pubEvery is how many Allocs (or DecRefs) of a class the hot paths count
// between two publications of the count: ReadStats's Allocs and Frees lag
// the exact counts by less than pubEvery per class, and by nothing after a
// slab of the class was taken or released or a fresh chunk handed out (of
// every chunk of a slab once, so no steady state does it per operation).
const pubEvery = 64

// freed counts a DecRef that freed a chunk of the class, and publishes the
// count every pubEvery.
func (cl *class) freed() {
	if cl.frees++; cl.frees%pubEvery == 0 {
		cl.pubFrees.Store(cl.frees)
	}
}

// publish makes the class's exact counts of Alloc and DecRef visible to
// ReadStats: allocs first, so that a reader that loads frees first never
// sees more frees than allocs.
func (cl *class) publish() {
	cl.pubAllocs.Store(cl.allocs)
	cl.pubFrees.Store(cl.frees)
}

// slab is one slab of memory and its chunks' bookkeeping.
type slab struct {
	mem        []byte
	base       uintptr
	cl         *class
	size       uint32 // chunk size
	used       int32  // chunks in use
	freeHead   int32  // first free chunk, -1 if none (besides fresh ones)
	fresh      int32  // chunks from fresh on were never handed out
	slot       int32
	gen0       uint32 // generation of a chunk never handed out
	recip      uint64 // ^uint64(0)/size + 1: off/size is the high word of off*recip
	shift      uint32 // log2(size) if size is a power of two, else 0
	prev, next *slab  // links in the class's list of slabs with a free chunk
	listed     bool
	chunks     []chunk
	links      []link // chain links by chunk; nil until a chunk of s is chained
}

// link is the chain bookkeeping of one chunk: its successor, and how many
// of its references are held by chain predecessors (see [Arena.SetNext]).
// A DecRef or LocDecRef may drop only the other references: the chain
// drops its own when the predecessor is freed or relinked, so a DecRef
// that would take the count down to preds is a DecRef too many, caught
// there instead of when the chain is released.
type link struct {
	next  Loc
	preds int32
}

// chunk is the bookkeeping of one chunk.
type chunk struct {
	refs     int32
	gen      uint32 // incremented at every free
	size     uint32 // bytes requested at Alloc: the capacity handed out
	freeNext int32  // next free chunk while free
}

// maxClasses bounds the number of chunk classes a growth factor close to 1
// may create.
const maxClasses = 1024

// tabLimit is the largest request the class lookup table covers.
const tabLimit = 64 << 10

// NewArena returns an arena whose chunk classes start at startChunkSize
// bytes and grow by growthFactor, carved from slabs of slabSize bytes
// obtained from malloc (make when malloc is nil), as go-slab's NewArena
// does. Class sizes are rounded up to a multiple of 8, so that every chunk
// is 8-byte aligned when malloc's slabs are, and the last class is slabSize
// itself.
//
// It returns an error naming the bad parameter for a non-positive size, a
// slabSize above [MaxSlabSize], a startChunkSize above slabSize, or a
// growthFactor that is not above 1 (or so close to 1 that it would make
// more than 1024 classes).
func NewArena(startChunkSize, slabSize int, growthFactor float64, malloc func(size int) []byte, opts ...Option) (*Arena, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	switch {
	case startChunkSize <= 0:
		return nil, fmt.Errorf("memkit/slab: startChunkSize %d must be positive", startChunkSize)
	case slabSize <= 0 || slabSize > MaxSlabSize:
		return nil, fmt.Errorf("memkit/slab: slabSize %d must be between 1 and %d", slabSize, MaxSlabSize)
	case startChunkSize > slabSize:
		return nil, fmt.Errorf("memkit/slab: startChunkSize %d > slabSize %d", startChunkSize, slabSize)
	case !(growthFactor > 1) || math.IsInf(growthFactor, 1):
		return nil, fmt.Errorf("memkit/slab: growthFactor %v must be greater than 1", growthFactor)
	case cfg.idleSlabs < 0:
		return nil, fmt.Errorf("memkit/slab: IdleSlabs %d must be >= 0", cfg.idleSlabs)
	case cfg.budget < 0:
		return nil, fmt.Errorf("memkit/slab: Budget %d must be >= 0", cfg.budget)
	}
	var sizes []int
	for c := roundUp8(startChunkSize); c < slabSize; {
		sizes = append(sizes, c)
		if len(sizes) > maxClasses {
			return nil, fmt.Errorf("memkit/slab: growthFactor %v makes more than %d classes from %d to %d bytes",
				growthFactor, maxClasses, startChunkSize, slabSize)
		}
		next := math.Ceil(float64(c) * growthFactor)
		if next >= float64(slabSize) {
			break
		}
		c = roundUp8(max(int(next), c+1))
	}
	sizes = append(sizes, slabSize)
	if malloc == nil {
		malloc = func(n int) []byte { return make([]byte, n) }
	}
	a := &Arena{
		classes:   make([]class, len(sizes)),
		slabSize:  slabSize,
		malloc:    malloc,
		free:      cfg.free,
		idleSlabs: cfg.idleSlabs,
		bud:       cfg.bud,
	}
	if a.bud == nil {
		a.bud = cfg.newBudget()
	}
	if checked.Enabled {
		a.chk = &arenaChecked{trk: cfg.trk}
		if a.chk.trk == nil {
			a.chk.trk = checked.NewTracker("slab")
			checked.Register(a, a.chk.trk)
		}
	}
	for i, sz := range sizes {
		a.classes[i] = class{size: uint32(sz), perSlab: int32(slabSize / sz)}
	}
	a.tabMax = min(slabSize, tabLimit)
	a.tab = make([]uint16, (a.tabMax+7)>>3+1)
	c := 0
	for i := range a.tab {
		for int(a.classes[c].size) < i<<3 && c < len(sizes)-1 {
			c++
		}
		a.tab[i] = uint16(c)
	}
	return a, nil
}

func roundUp8(n int) int { return (n + 7) &^ 7 }

// pow2Shift returns log2(size) if size is a power of two, else 0 (size is
// at least 8, so 0 is no power's log).
func pow2Shift(size uint32) uint32 {
	if size&(size-1) != 0 {
		return 0
	}
	return uint32(bits.TrailingZeros32(size))
}

// chunkIndex returns off / s.size: a shift for a power-of-two class size,
// a multiplication by the reciprocal otherwise, never a divide.
func (s *slab) chunkIndex(off uint32) uint32 {
	if s.shift != 0 {
		return off >> (s.shift & 31)
	}
	hi, _ := bits.Mul64(uint64(off), s.recip)
	return uint32(hi)
}

// classOf returns the class of a request of n bytes, 0 <= n <= slabSize.
func (a *Arena) classOf(n int) int {
	if n <= a.tabMax {
		return int(a.tab[(n+7)>>3])
	}
	return sort.Search(len(a.classes), func(i int) bool { return int(a.classes[i].size) >= n })
}

// ClassSize returns the size of the chunk class that serves a request of n
// bytes, or 0 if n is larger than the largest class.
func (a *Arena) ClassSize(n int) int {
	if n < 0 {
		panic(msgNegative)
	}
	if n > a.slabSize {
		return 0
	}
	return int(a.classes[a.classOf(n)].size)
}

// Alloc returns a buffer of length and capacity n from a chunk of the
// smallest class that fits it, with a reference count of one. It returns
// nil if n is larger than the largest class (the slab size) or if malloc
// returned no memory for a new slab; [Arena.TryAlloc] says which. Alloc(0)
// returns an empty, non-nil buffer that owns a chunk of the smallest class.
// Alloc panics with "memkit/slab: negative size" if n < 0.
//
// The buffer holds what the chunk's previous user wrote. It stays valid
// until its reference count drops to zero.
func (a *Arena) Alloc(n int) []byte {
	// The hot path: a request the class table covers (which rules out a
	// negative n), and a chunk freed before on the free list of the first
	// slab of its class. Everything else goes through alloc.
	if uint(n) <= uint(a.tabMax) && !checked.Enabled {
		cl := a.classAt(a.tabAt(n))
		if s := cl.head; s != nil && s.freeHead >= 0 {
			i := s.freeHead
			ch := s.chunkAt(i)
			s.freeHead = ch.freeNext
			if cl.take(s, ch, n) {
				a.unlist(cl, s)
			}
			return unsafe.Slice((*byte)(s.chunkPtr(i)), uint(n))
		}
	}
	b, _ := a.alloc(n)
	return b
}

// tabAt returns the class of a request of n bytes, 0 <= n <= a.tabMax,
// from the table, without a bounds check: NewArena makes a.tab
// (a.tabMax+7)>>3+1 long.
func (a *Arena) tabAt(n int) uintptr {
	return uintptr(*(*uint16)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(a.tab)), uintptr(n+7)>>3*2)))
}

// classAt returns class c, which the table gave, without a bounds check.
func (a *Arena) classAt(c uintptr) *class {
	return (*class)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(a.classes)), c*unsafe.Sizeof(class{})))
}

// chunkAt returns the bookkeeping of chunk i of s, 0 <= i < len(s.chunks),
// without a bounds check.
func (s *slab) chunkAt(i int32) *chunk {
	return (*chunk)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.chunks)), uintptr(i)*unsafe.Sizeof(chunk{})))
}

// TryAlloc is Alloc that reports why it failed: [ErrTooLarge] for a request
// larger than the largest class, [ErrNoSpace] if malloc returned no slab,
// [ErrBudget] if a new slab would exceed the [WithBudget] budget. A failed
// TryAlloc leaves the arena unchanged, except for Stats.Failures.
func (a *Arena) TryAlloc(n int) ([]byte, error) { return a.alloc(n) }

func (a *Arena) alloc(n int) ([]byte, error) {
	if n < 0 {
		panic(msgNegative)
	}
	if n > a.slabSize {
		a.failures.Add(1)
		a.allocErr = ErrTooLarge
		return nil, ErrTooLarge
	}
	var c int
	if n <= a.tabMax {
		c = int(a.tab[(n+7)>>3])
	} else {
		c = a.classOf(n)
	}
	cl := &a.classes[c]
	s := cl.head
	if s == nil {
		var err error
		if s, err = a.grow(c); s == nil {
			if checked.Enabled && a.quarantined() {
				// The chunks in quarantine would serve in a release build.
				a.flushQuarantine()
				if s = cl.head; s == nil {
					s, err = a.grow(c)
				}
			}
			if s == nil {
				a.failures.Add(1)
				a.allocErr = err
				return nil, err
			}
		}
	}
	if checked.Enabled {
		a.checkAlloc(s, n)
	}
	i := s.freeHead
	var ch *chunk
	fresh := i < 0
	if !fresh {
		ch = &s.chunks[i]
		s.freeHead = ch.freeNext
	} else {
		i = s.fresh
		s.fresh++
		ch = &s.chunks[i]
		ch.gen = s.gen0
	}
	if cl.take(s, ch, n) {
		a.unlist(cl, s)
	}
	if fresh {
		cl.publish() // once per chunk of a slab taken: rare enough
	}
	return unsafe.Slice((*byte)(s.chunkPtr(i)), n), nil
}

// take gives chunk ch of s, off its free list or fresh, to a request of n
// bytes, and reports whether that filled s, which the caller must then
// unlist. It leaves the unlisting to the caller so that it stays small
// enough to inline into Alloc's hot path.
func (cl *class) take(s *slab, ch *chunk, n int) (full bool) {
	ch.refs = 1
	ch.size = uint32(n)
	if s.used == 0 {
		cl.idle--
	}
	s.used++
	if cl.allocs++; cl.allocs%pubEvery == 0 {
		cl.pubAllocs.Store(cl.allocs) // and at a fresh chunk: see alloc
	}
	return s.used == cl.perSlab
}

// chunkPtr returns the address of the first byte of chunk i of s.
func (s *slab) chunkPtr(i int32) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.mem)), uintptr(i)*uintptr(s.size))
}

// allocHeld is alloc without growing, for a Shared whose budget refused
// another shard a slab: a chunk of a slab the arena holds, or nil. It
// counts no failure.
func (a *Arena) allocHeld(n int) []byte {
	if n > a.slabSize {
		return nil
	}
	cl := &a.classes[a.classOf(n)]
	if cl.head == nil {
		return nil
	}
	b, _ := a.alloc(n)
	return b
}

// grow adds a slab to class c, at the head of its list, and returns it, or
// nil and the reason: ErrBudget if the budget refused it, ErrNoSpace if
// malloc failed.
func (a *Arena) grow(c int) (*slab, error) {
	if !a.bud.TryCharge(int64(a.slabSize)) {
		return nil, ErrBudget
	}
	mem := a.malloc(a.slabSize)
	if len(mem) < a.slabSize {
		a.bud.Release(int64(a.slabSize))
		return nil, ErrNoSpace
	}
	cl := &a.classes[c]
	var slot int32
	if k := len(a.freeSlots); k > 0 {
		slot = a.freeSlots[k-1]
		a.freeSlots = a.freeSlots[:k-1]
	} else {
		if len(a.slabs) >= slotMask {
			if a.free != nil {
				a.free(mem)
			}
			a.bud.Release(int64(a.slabSize))
			return nil, ErrNoSpace // no slot number left for a Loc to name
		}
		slot = int32(len(a.slabs))
		a.slabs = append(a.slabs, nil)
		a.slotGen = append(a.slotGen, 0)
	}
	s := &slab{
		mem:      mem,
		base:     uintptr(unsafe.Pointer(unsafe.SliceData(mem))),
		slot:     slot,
		cl:       cl,
		size:     cl.size,
		freeHead: -1,
		gen0:     a.slotGen[slot],
		recip:    ^uint64(0)/uint64(cl.size) + 1,
		shift:    pow2Shift(cl.size),
		chunks:   newChunks(int(cl.perSlab), mem),
	}
	a.slabs[slot] = s
	i := sort.Search(len(a.index), func(i int) bool { return a.index[i].base > s.base })
	a.index = append(a.index, slabRef{})
	copy(a.index[i+1:], a.index[i:])
	a.index[i] = slabRef{s.base, s}
	cl.slabs++
	cl.idle++
	cl.pubSlabs.Store(uint64(cl.slabs))
	cl.grows.Add(1)
	a.pushHead(cl, s)
	if checked.Enabled {
		checked.Fill(mem[:a.slabSize], checked.PoisonByte)
	}
	return s, nil
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
	// The next slab in this slot starts past every generation a Loc into
	// this one may hold.
	g := s.gen0
	for i := range s.chunks[:s.fresh] {
		g = max(g, s.chunks[i].gen)
	}
	a.slotGen[s.slot] = g + 1
	a.slabs[s.slot] = nil
	s.prev, s.next = nil, nil
	a.freeSlots = append(a.freeSlots, s.slot)
	i := sort.Search(len(a.index), func(i int) bool { return a.index[i].base >= s.base })
	copy(a.index[i:], a.index[i+1:])
	a.index[len(a.index)-1] = slabRef{}
	a.index = a.index[:len(a.index)-1]
	if a.last == s {
		a.setLast(nil)
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

// lookup returns the slab holding address p, or nil.
func (a *Arena) lookup(p uintptr) *slab {
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
	a.setLast(s)
	return s
}

// setLast makes s the slab of the last lookup, and publishes its base for
// a Shared.
func (a *Arena) setLast(s *slab) {
	a.last = s
	if a.lastBase != nil {
		var base uintptr
		if s != nil {
			base = s.base
		}
		a.lastBase.Store(base)
	}
}

// locate returns the slab and chunk of buf, or nil if buf is not inside one
// chunk of the arena.
func (a *Arena) locate(buf []byte) (*slab, int32) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	if p == 0 {
		return nil, 0
	}
	s := a.lookup(p)
	if s == nil {
		return nil, 0
	}
	off := uint32(p - s.base)
	i := s.chunkIndex(off)
	if int(i) >= len(s.chunks) || uint64(off-i*s.size)+uint64(cap(buf)) > uint64(s.size) {
		return nil, 0
	}
	return s, int32(i)
}

// find is locate for methods that panic on a foreign buffer.
func (a *Arena) find(buf []byte) (*slab, int32) {
	s, i := a.locate(buf)
	if s == nil {
		panic(msgForeign)
	}
	return s, i
}

// Owns reports whether buf lies inside a chunk of the arena that is
// currently allocated: a buffer returned by Alloc, LocToBuf or GetNext and
// not yet freed, or a re-slice of one. It never panics.
func (a *Arena) Owns(buf []byte) bool {
	s, i := a.locate(buf)
	return s != nil && s.chunks[i].refs > 0
}

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

// freeChain frees chunk i of s and then, iteratively (a chain may be
// long), every successor whose last reference that drops.
func (a *Arena) freeChain(s *slab, i int32) {
	for {
		var next Loc
		if s.links != nil {
			next, s.links[i].next = s.links[i].next, Loc{}
		}
		a.putChunk(s, i)
		if next.IsNil() {
			return
		}
		if next.slab&^slotMask != a.tag {
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
	s := a.valid(next)
	if s == nil || s.links == nil || s.links[next.chunk].preds <= 0 {
		a.badFrees.Add(1)
		if checked.Enabled {
			a.staleLoc("LocDecRef", next)
		}
		panic(msgStale)
	}
	i := int32(next.chunk)
	s.links[i].preds--
	ch := &s.chunks[i]
	if ch.refs--; ch.refs > 0 {
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
	s, i := a.resolve(nl)
	a.addRef(&s.chunks[i], msgAddRefFree)
	if s.links == nil {
		s.links = make([]link, len(s.chunks))
	}
	s.links[i].preds++
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
	s, i := a.find(buf)
	ch := &s.chunks[i]
	if ch.refs <= 0 {
		if checked.Enabled {
			a.misuse("BufToLoc", checked.StaleHandle, s, i, "a buffer of a freed chunk")
		}
		panic(msgFreeChunk)
	}
	off := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))) - s.base - uintptr(i)*uintptr(s.size))
	return Loc{slab: a.tag | (uint32(s.slot) + 1), chunk: uint32(i), gen: ch.gen, off: off, n: uint32(len(buf))}
}

// valid returns the slab of l, or nil if l is nil or stale.
func (a *Arena) valid(l Loc) *slab {
	if l.slab&^slotMask != a.tag {
		return nil
	}
	k := int(l.slab&slotMask) - 1
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

// resolve returns the slab and chunk of l, or panics if l is stale.
func (a *Arena) resolve(l Loc) (*slab, int32) {
	s := a.valid(l)
	if s == nil {
		if checked.Enabled {
			a.staleLoc(callerOp(1), l)
		}
		panic(msgStale)
	}
	return s, int32(l.chunk)
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
	s, i := a.resolve(l)
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
	s, i := a.resolve(l)
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
	s := a.valid(l)
	if s == nil {
		a.badFrees.Add(1)
		if checked.Enabled {
			a.staleLoc("LocDecRef", l)
		}
		panic(msgStale)
	}
	return a.decRef(s, int32(l.chunk))
}

// SetNext makes next the chain successor of buf's chunk, as go-slab's
// SetNext does: the chunk of buf takes a reference on the chunk of next
// (dropped when buf's chunk is freed or given another successor) and drops
// the one it held on its previous successor. A nil next ends the chain at
// buf. Both buffers must be live buffers of the arena; SetNext panics like
// [Arena.BufToLoc] otherwise. Chains must not form cycles: a cycle keeps
// its chunks alive forever.
func (a *Arena) SetNext(buf, next []byte) {
	a.live(buf, "SetNext")
	var nl Loc
	if next != nil {
		nl = a.BufToLoc(next)
		a.chainRef(nl)
	}
	if old := a.swapNext(buf, nl); !old.IsNil() {
		a.unchain(old)
	}
}

// live returns the slab and chunk of buf, and panics unless buf is a live
// buffer of the arena.
func (a *Arena) live(buf []byte, op string) (*slab, int32) {
	s, i := a.find(buf)
	if s.chunks[i].refs <= 0 {
		if checked.Enabled {
			a.misuse(op, checked.StaleHandle, s, i, "a buffer of a freed chunk")
		}
		panic(msgFreeChunk)
	}
	return s, i
}

// swapNext makes nl the successor of buf's chunk, which must be live, and
// returns the previous one, whose reference the caller must drop.
func (a *Arena) swapNext(buf []byte, nl Loc) Loc {
	s, i := a.live(buf, "SetNext")
	if s.links == nil {
		if nl.IsNil() {
			return Loc{}
		}
		s.links = make([]link, len(s.chunks))
	}
	old := s.links[i].next
	s.links[i].next = nl
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
	l := a.nextLoc(buf, "GetNext")
	if l.IsNil() {
		return nil
	}
	a.LocAddRef(l)
	return a.LocToBuf(l)
}

// NextLoc returns the [Loc] of the chain successor of buf's chunk, or the
// nil Loc, without changing any reference count. The successor stays
// valid as long as buf's chunk holds it.
func (a *Arena) NextLoc(buf []byte) Loc { return a.nextLoc(buf, "NextLoc") }

// nextLoc is NextLoc for op, the method whose misuse it reports.
func (a *Arena) nextLoc(buf []byte, op string) Loc {
	s, i := a.live(buf, op)
	if s.links == nil {
		return Loc{}
	}
	return s.links[i].next
}

// publishAll publishes the exact counts of every class: for the owner's
// own reads, in tests.
func (a *Arena) publishAll() {
	for c := range a.classes {
		a.classes[c].publish()
	}
}

// ReadStats overwrites *st with a snapshot of the arena's statistics and a
// row per chunk class, smallest first. It does not allocate once
// st.Classes has room for every class.
//
// Unlike the arena's other methods, ReadStats may be called from any
// goroutine while the owner uses the arena (by [memkit.Publish] or a
// Prometheus collector, for instance): it only reads counters that the
// arena publishes with atomic stores, so the owner's Alloc and DecRef pay
// no atomic instruction for it. Every field is a value the arena had, and
// none is negative, but they are not one snapshot: a class's Allocs and
// Frees (and so its LiveObjects, InUseBytes and IdleObjects) are exact as
// when a slab of the class was last taken or released or a chunk first
// handed out, and lag the exact counts by less than 64 each otherwise. Grows, Releases,
// ReservedBytes, Failures and BadFrees are exact.
//
// A chunk counts at its class size in InUseBytes; ReservedBytes counts
// every slab the arena holds, whole. Grows and Releases count slabs; a
// class row's Releases counts the chunks of the slabs it released.
// Failures counts Alloc and TryAlloc calls that returned nothing; BadFrees
// counts DecRef and LocDecRef calls that panicked.
func (a *Arena) ReadStats(st *stats.Stats) { a.readStats(st, false) }

// readStats is ReadStats; with exact, for a caller that has the arena to
// itself (a Shared holding the shard's lock), it reads the owner's exact
// counts instead of the published ones.
func (a *Arena) readStats(st *stats.Stats, exact bool) {
	st.Reset()
	for c := range a.classes {
		cl := &a.classes[c]
		// Frees before allocs: both only grow, and publish stores allocs
		// first, so live cannot come out negative.
		frees := cl.pubFrees.Load()
		allocs := max(cl.pubAllocs.Load(), frees)
		if exact {
			frees, allocs = cl.frees, cl.allocs
		}
		live := allocs - frees
		size := uint64(cl.size)
		slabs := cl.pubSlabs.Load()
		releases := cl.releases.Load()
		grows := cl.grows.Load()
		room := slabs * uint64(cl.perSlab)
		st.Classes = append(st.Classes, stats.ClassStats{
			Size:          size,
			InUseBytes:    live * size,
			ReservedBytes: slabs * uint64(a.slabSize),
			LiveObjects:   live,
			IdleObjects:   room - min(live, room),
			Allocs:        allocs,
			Frees:         frees,
			Grows:         grows,
			Releases:      releases * uint64(cl.perSlab),
		})
		st.InUseBytes += live * size
		st.ReservedBytes += slabs * uint64(a.slabSize)
		st.LiveObjects += live
		st.Allocs += allocs
		st.Frees += frees
		st.Grows += grows
		st.Releases += releases
	}
	st.Failures = a.failures.Load()
	st.BadFrees = a.badFrees.Load()
}
