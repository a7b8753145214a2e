package slab

import (
	"fmt"
	"math"
	"sort"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
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
// checked build (see docs/slab.md, "Checked build"), which catches it.
type Arena struct {
	classes   []class
	tab       []uint16 // class of n, indexed by (n+7)>>3, n <= tabMax
	tabMax    int
	slabSize  int
	malloc    mallocFunc
	free      func([]byte)
	idleSlabs int

	slabs    []*slab  // by slab number; nil for a free number
	numGen   []uint32 // by slab number: the generation the next slab with it starts at
	freeNums []int32
	index    []slabRef // live slabs by base address, for buffer lookup
	last     *slab     // slab of the last buffer looked up or handed out

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
	// The mask of the slab number in a Loc's slab field: srefMask for an
	// Arena, the bits below the shard for a shard.
	numMask uint32
	// For a shard: called with every slab the arena takes, and its class,
	// under the shard's lock.
	onGrow func(s *slab, c int)
	// For a shard of a Shared whose holders change counts without the
	// lock: the changes under it are atomic too.
	atomicRefs bool

	// The budget and alert of WithBudget and WithBudgetAlert, charged when
	// a slab is taken or released; nil for none.
	bud *budget.Budget

	// The checked build's state (-tags memkitdebug); nil otherwise.
	chk *arenaChecked
}

// class is one chunk size class.
type class struct {
	size    uint32 // chunk size
	perSlab int32  // chunks per slab
	// Slabs with a free chunk, as a list: slabs that became
	// non-full go to the head, slabs that became empty to the tail, and
	// Alloc takes from the head, so that empty slabs stay empty and can be
	// released.
	head, tail *slab
	slabs      int // slabs of this class
	idle       int // slabs of this class with no chunk in use

	// The owner's exact counts of Alloc and DecRef, plain: the hot paths
	// bump them without an atomic instruction.
	allocs, frees uint64
	// For a shard of a Shared: of them, the chunks carved for the class's
	// idle set (see Shared.refill) and reclaimed from it, and the frees
	// into the set of the chunks reclaimed (see Arena.reclaim).
	carved, drained, setFrees uint64

	// What ReadStats reads, from any goroutine: allocs and frees as the
	// owner last published them (see publish), and the slow-path counts.
	pubAllocs, pubFrees       atomic.Uint64
	pubSlabs, grows, releases atomic.Uint64
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
	if err == nil {
		err = cfg.check(startChunkSize, slabSize, growthFactor)
	}
	if err != nil {
		return nil, err
	}
	sizes, err := classSizes(startChunkSize, slabSize, growthFactor)
	if err != nil {
		return nil, err
	}
	a := &Arena{
		classes:   make([]class, len(sizes)),
		slabSize:  slabSize,
		malloc:    cfg.source(malloc),
		free:      cfg.free,
		idleSlabs: cfg.idleSlabs,
		bud:       cfg.bud,
		numMask:   srefMask,
	}
	if a.bud == nil {
		a.bud = cfg.New()
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
	a.tab = classTable(sizes, a.tabMax)
	return a, nil
}

// classSizes returns the chunk sizes of the classes NewArena's parameters
// ask for, which check accepted: from startChunkSize up by growthFactor,
// each a multiple of 8, and slabSize last. It returns an error if there
// would be more than maxClasses.
func classSizes(startChunkSize, slabSize int, growthFactor float64) ([]int, error) {
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
	return append(sizes, slabSize), nil
}

// classTable returns the class lookup table of the class sizes for
// requests up to tabMax bytes: the class of n at (n+7)>>3.
func classTable(sizes []int, tabMax int) []uint16 {
	tab := make([]uint16, (tabMax+7)>>3+1)
	c := 0
	for i := range tab {
		for sizes[c] < i<<3 && c < len(sizes)-1 {
			c++
		}
		tab[i] = uint16(c)
	}
	return tab
}

func roundUp8(n int) int { return (n + 7) &^ 7 }

// mallocFunc is where an arena's slabs come from: the malloc of NewArena,
// the function of WithMalloc, offheap's, or the Go heap's. An error
// reaches TryAlloc as it is.
type mallocFunc func(size int) ([]byte, error)

// heapSlab is the malloc of an arena given none: slabs from the Go heap.
func heapSlab(n int) ([]byte, error) { return make([]byte, n), nil }

// legacyMalloc adapts go-slab's malloc, which returns nil (or a short
// slice) for no memory, to a mallocFunc.
func legacyMalloc(malloc func(int) []byte) mallocFunc {
	return func(n int) ([]byte, error) {
		mem := malloc(n)
		if len(mem) < n {
			return nil, ErrNoSpace
		}
		return mem, nil
	}
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
			if checked.Enabled && a.quarantined() && err != errOverlap {
				// The chunks in quarantine would serve in a release build.
				a.flushQuarantine()
				if s = cl.head; s == nil {
					s, err = a.grow(c)
				}
			}
			if s == nil {
				a.failures.Add(1)
				a.allocErr = err
				if err == errOverlap && a.onGrow == nil {
					panic(msgOverlap) // a shard's Shared panics once unlocked
				}
				return nil, err
			}
		}
	}
	if checked.Enabled {
		a.checkAlloc(s, n)
	}
	i := a.takeFrom(cl, s, n)
	return unsafe.Slice((*byte)(s.chunkPtr(i)), n), nil
}

// takeFrom gives a chunk of s, the first slab of class cl's list, off its
// free list or fresh, to a request of n bytes, and returns its index.
func (a *Arena) takeFrom(cl *class, s *slab, n int) int32 {
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
	return i
}

// take gives chunk ch of s, off its free list or fresh, to a request of n
// bytes, and reports whether that filled s, which the caller must then
// unlist. It leaves the unlisting to the caller so that it stays small
// enough to inline into Alloc's hot path.
func (cl *class) take(s *slab, ch *chunk, n int) (full bool) {
	ch.setRefs(1)
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
