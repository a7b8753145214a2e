package bytepool

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/keep"
	"github.com/memkit/memkit/internal/owned"
	"github.com/memkit/memkit/internal/sizeclass"
	"github.com/memkit/memkit/internal/sysmem"
)

// Pool is a pool of []byte buffers in size classes.
//
// A Pool is safe for concurrent use by multiple goroutines, and a buffer
// taken on one goroutine may be put back on any other at the same cost.
// The zero value is not usable: a Pool must be created with [New]. A Pool
// must not be copied after first use.
//
// An [Elastic] pool's Get and Put are one sync.Pool Get or Put of the
// buffer's data pointer (the P's own list, no atomic instruction, no boxing)
// plus a table lookup, a capacity check and the idle mark: within 10% of a
// bare sync.Pool per class. A [Bounded] pool's are a sync.Pool Get or Put
// of the buffer's ticket and a store into the buffer's slot (see
// bounded.go): no lock and no locked instruction either.
// Neither allocates once the pool is warm. For a hot loop on one
// goroutine, a [Cache] is cheaper still.
//
// Get rounds a request up to its size class; the space lost is at most one
// class step (with the default 4 classes per doubling, under 20% for sizes
// above 64 bytes, 25% for the smallest). Buffers are not zeroed unless the
// pool was built [WithZeroing]. An [Elastic] pool's buffers live on the Go
// heap, one object each, and idle ones go back to the GC once no Get has
// needed them for a whole [RetentionPeriod] (see the package
// documentation, "Retention"); a [Bounded] pool's live in one Go-heap
// region reserved at New that the GC never scans.
type Pool struct {
	// Class lookup, copied from the size-class table for the hot path.
	minSize  int
	maxSize  int
	minShift uint
	perShift uint
	sizes    []int
	tab      []uint8 // class of n, indexed by (n+7)>>3, n <= tabMax
	tabBase  unsafe.Pointer
	tabMax   int  // the largest n in the table, or -1 for none
	tabEnd   uint // tabMax+1: uint(n) < tabEnd means n is in the table
	fastEnd  uint // tabEnd if the pool is plain, else 0, and no class past a locked one: uint(n) < fastEnd means Get and Put take the fast path

	// The Elastic fast path's, copied from the engine: Get and Put read
	// them inline.
	elasticBase unsafe.Pointer // &elastic.classes[0]
	sampleMax   uintptr        // a buffer is sampled if its address hash is at most this
	sampleSeed  uintptr        // added to the address before hashing, random per pool

	magCap []int // per class: capacity of a Cache's free list

	zeroed bool
	plain  bool // Elastic, not zeroing, not checked: Get has nothing to do but slice
	// quickBounded: Bounded, not zeroing, not checked: Get and Put of sizes
	// in the lookup table call the engine's get and put, and so do those
	// of larger sizes below quickEnd: the largest class + 1 for such a pool
	// with a table (so at most 256 classes), 0 otherwise.
	quickBounded bool
	quickEnd     uint
	secret       uint64
	policy       Policy

	// The engine of the pool's policy, the other nil: the Pool is a façade
	// that finds the class and serves what both share.
	elastic *elasticEngine // elastic.go, retain.go
	bounded *boundedEngine // bounded.go, region.go

	keeper keep.Keeper // what buffer reads to keep idle buffers itself (keep.go)

	counts counters
	budget *budget.Budget   // nil: no limit and no alert
	track  *checked.Tracker // checked build only
}

// counters are the pool-wide counts of slow-path events, exact, in atomics
// that only slow paths touch.
type counters struct {
	oversizeAllocs atomic.Uint64
	oversizeFrees  atomic.Uint64
	oversizeBytes  atomic.Int64 // live bytes above the largest class; foreign Puts can drive it below 0
	fallbacks      atomic.Uint64
	failures       atomic.Uint64
	badFrees       atomic.Uint64
}

// New returns a pool configured by opts, or an error naming the first
// invalid option.
func New(opts ...Option) (*Pool, error) {
	cfg, t, err := configure(opts)
	if err != nil {
		return nil, err
	}
	p := &Pool{
		minSize:    t.Min(),
		maxSize:    t.Max(),
		minShift:   uint(bits.TrailingZeros(uint(t.Min()))),
		perShift:   uint(bits.TrailingZeros(uint(cfg.perDoubling))),
		sizes:      t.Sizes(),
		magCap:     make([]int, t.Len()),
		zeroed:     cfg.zeroed,
		plain:      !cfg.zeroed && cfg.policy == Elastic && !checked.Enabled,
		secret:     rand.Uint64() | 1,
		policy:     cfg.policy,
		sampleMax:  sampleMaxFor(cfg.sampleBits),
		sampleSeed: uintptr(rand.Uint64()),
	}
	p.buildTable(t)
	for c, size := range p.sizes {
		p.magCap[c] = magazineSize(size)
	}
	if cfg.policy == Bounded {
		if p.bounded, err = newBounded(p, &cfg); err != nil {
			return nil, err
		}
		p.quickBounded = !cfg.zeroed && !checked.Enabled
		if p.quickBounded && p.tabEnd > 0 {
			p.quickEnd = uint(p.maxSize) + 1
		}
	} else {
		p.elastic = newElastic(p, &cfg)
	}
	p.newKeeper()
	if checked.Enabled {
		p.track = checked.NewTracker("bytepool")
		checked.Register(p, p.track)
	}
	return p, nil
}

// magazineSize is how many idle buffers of a class a Cache keeps (and a
// Bounded pool carves at a time): up to 64 for small classes, fewer for
// large ones so that a Cache holds about 512 KiB of a class, and never
// fewer than 2.
func magazineSize(size int) int {
	return min(max((512<<10)/size, 2), 64)
}

// class returns the class of a request of n bytes, 0 <= n <= maxSize: one
// table load up to tabMax, the bit arithmetic of [sizeclass.Table.Index]
// above it.
func (p *Pool) class(n int) int {
	if n <= p.tabMax {
		return int(p.tab[uint(n+tabStep-1)/tabStep])
	}
	if n <= p.minSize {
		return 0
	}
	e := uint(bits.Len(uint(n-1))) - 1
	return int((e-p.minShift)<<p.perShift) + (n-1-1<<e)>>(e-p.perShift) + 1
}

// buildTable fills the class lookup table. Every class is a multiple of
// [sizeclass.MinStep] (8 bytes), so rounding n up to a multiple of 8 never
// crosses a class: the table at that granularity is exact, and indexing it
// takes a constant shift. It covers sizes up to 64 KiB (an 8 KiB table),
// when there are at most 256 classes.
func (p *Pool) buildTable(t *sizeclass.Table) {
	p.tabMax = min(64<<10, t.Max())
	if t.Len() > 256 {
		p.tabMax = -1
		return
	}
	p.tab = make([]uint8, p.tabMax/tabStep+1)
	for i := range p.tab {
		p.tab[i] = uint8(t.Index(i * tabStep))
	}
	p.tabBase = unsafe.Pointer(&p.tab[0])
	p.tabEnd = uint(p.tabMax + 1)
	if p.plain {
		p.fastEnd = p.tabEnd
	}
}

// tabStep is the lookup table's granularity.
const tabStep = sizeclass.MinStep

// lookup is the class of n, 0 <= n <= tabMax, from the table at tab: one
// load, no bounds check (n <= tabMax keeps the index inside the table).
func lookup(tab unsafe.Pointer, n int) uint8 {
	return *(*uint8)(unsafe.Add(tab, uint(n+tabStep-1)/tabStep))
}

// Get returns a buffer of length n whose capacity is n rounded up to its
// size class. The capacity is locked (a three-index slice), so append past
// it reallocates rather than write into memory the pool owns.
//
// Get(0) returns an empty, non-nil buffer of the smallest class. A request
// above the largest class is served by make and counted in
// Stats.HeapFallbacks; Put accepts it back and drops it. A request the
// pool's budget cannot cover comes from the heap too, counted the same way
// (see [WithBudget]). Get panics with "memkit/bytepool: negative size" if
// n < 0, and with "memkit/bytepool: size ... is more than the machine can
// allocate now" when it would have to make a buffer (a size above the
// largest class, or a new buffer of a class of 64 MiB or more) that the
// machine cannot serve: the kernel is asked before anything is reserved,
// so a size read from a peer never ends the process with the runtime's
// fatal out-of-memory.
//
// The buffer holds what its previous user wrote (but for its first 8 bytes,
// which an Elastic pool uses to mark idle buffers and clears) unless the
// pool was built [WithZeroing]. Hand it back with Put when done; a buffer
// never returned is simply collected by the GC (Elastic) or stays out of
// the region (Bounded).
func (p *Pool) Get(n int) []byte {
	if uint(n) >= p.fastEnd {
		if p.quickBounded && uint(n) < p.tabEnd { // a Bounded pool's usual Get, one call deep
			return p.bounded.get(p.lookup(n), n)
		}
		if uint(n) < p.quickEnd { // and past the table
			return p.bounded.get(uint8(p.class(n)), n)
		}
		return p.getSlow(n)
	}
	c := p.lookup(n)
	e := p.elasticOf(c)
	ptr, _ := e.free.Get().(unsafe.Pointer)
	if ptr == nil {
		return p.elastic.getNew(int(c), n)
	}
	if p.sampled(ptr) {
		e.gets.Add(1)
	}
	clearIdle(ptr)
	return slice(ptr, n, e.size)
}

// lookup is the class of n, 0 <= n <= tabMax.
func (p *Pool) lookup(n int) uint8 { return lookup(p.tabBase, n) }

// getSlow is Get of a size past the lookup table, or from a pool that is
// zeroing, checked, or Bounded past the quick path Get takes itself.
func (p *Pool) getSlow(n int) []byte {
	if uint(n) > uint(p.maxSize) {
		return p.getOversize(n)
	}
	c := p.class(n)
	if p.bounded != nil {
		return p.bounded.getClass(c, n)
	}
	return p.elastic.getClass(c, n)
}

// slice returns the buffer at ptr with length n and capacity size, n <=
// size, which the class arithmetic guarantees: unsafe.Slice and a
// reslice would check it again.
func slice(ptr unsafe.Pointer, n, size int) []byte {
	return *(*[]byte)(unsafe.Pointer(&struct {
		ptr       unsafe.Pointer
		len, size int
	}{ptr, n, size}))
}

// TryGet is like Get but reports false, leaving the pool unchanged but for
// Stats.Failures, instead of falling back to the heap: when a Bounded pool's
// region is used up, when an Elastic pool with a [WithBudget] limit would
// need a new buffer past it, when n is above the largest class, or when a
// new buffer of a class of 64 MiB or more is more than the machine can
// allocate now. An Elastic pool without a limit never fails for n within
// the classes below 64 MiB.
func (p *Pool) TryGet(n int) ([]byte, bool) {
	if n < 0 {
		panic(errNegative)
	}
	if n > p.maxSize {
		p.counts.failures.Add(1)
		return nil, false
	}
	c := p.class(n)
	var ptr unsafe.Pointer
	if p.bounded != nil {
		ptr = p.bounded.take(c)
	} else {
		ptr = p.elastic.tryTake(c)
	}
	if ptr == nil {
		p.counts.failures.Add(1)
		return nil, false
	}
	return p.handOut(ptr, c, n), true
}

// handOut turns an idle buffer of class c into the slice Get returns.
func (p *Pool) handOut(ptr unsafe.Pointer, c, n int) []byte {
	if !p.plain {
		return p.handOutChecked(ptr, c, n)
	}
	clearIdle(ptr)
	return slice(ptr, n, p.sizes[c])
}

// handOutChecked is handOut for a Bounded or zeroing pool, or any pool in
// the checked build.
func (p *Pool) handOutChecked(ptr unsafe.Pointer, c, n int) []byte {
	size := p.sizes[c]
	b := unsafe.Slice((*byte)(ptr), size)
	if checked.Enabled {
		p.verifyPoison(b)
	}
	if p.zeroed {
		clear(b)
	} else if !checked.Enabled {
		clearIdle(ptr)
	}
	if checked.Enabled {
		p.trackOut(b, n)
	}
	return b[:n]
}

// An Elastic pool keeps no state per buffer, but it owns the bytes of the
// buffers it holds idle: Put writes a word derived from the buffer's address
// and the pool's random secret into the first 8 bytes (every class has at
// least 8), and handing the buffer out clears it. A Put that finds the word
// already there is a second Put of a buffer still idle in the pool, and
// panics as a double free: two O(1) word accesses on a cache line the
// caller has just used. A second Put after the pool handed the buffer out
// again finds the new user's bytes instead and cannot be told from a first:
// only the checked build catches that one. The odds that a user's own
// bytes equal the word by chance are 2^-64. A Bounded pool needs no mark:
// a buffer's slot says whether it is idle (see bounded.go).

// markIdle marks the buffer at ptr idle, panicking if it already is.
func (p *Pool) markIdle(ptr unsafe.Pointer) { markIdle(ptr, p.secret) }

// markIdle is [Pool.markIdle] with the pool's secret: the mark's one home
// is internal/keep, which buffer's kept buffers share.
func markIdle(ptr unsafe.Pointer, secret uint64) { keep.MarkIdle(ptr, secret, errDoubleFree) }

// clearIdle clears the idle mark of a buffer being handed out.
func clearIdle(ptr unsafe.Pointer) { keep.ClearIdle(ptr) }

// Panic messages, one prefix for the package's errors and panics.
const (
	prefix        = "memkit/bytepool: "
	errNegative   = prefix + "negative size"
	errDoubleFree = prefix + "double free"
)

// getOversize serves a request above the largest class from the heap.
func (p *Pool) getOversize(n int) []byte {
	if n < 0 {
		panic(errNegative)
	}
	b := makeOversize(n)
	p.counts.oversizeAllocs.Add(1)
	p.counts.oversizeBytes.Add(int64(n))
	p.counts.fallbacks.Add(1)
	if p.budget != nil {
		p.budget.Charge(int64(n))
	}
	if checked.Enabled {
		p.trackOut(b, n)
	}
	return b
}

// makeOversize makes a buffer of n bytes, or panics with a memkit message
// when the machine cannot serve it now.
func makeOversize(n int) []byte {
	mustServe(n)
	return make([]byte, n)
}

// mustServe panics with a memkit message unless the machine can serve a
// make of n bytes now ([sysmem.Available]: a compare below 64 MiB, one
// mapping asked of the kernel and given back above): make would end the
// process with the runtime's unrecoverable "out of memory" instead. Every
// path that makes a buffer of a size the caller chose passes through it
// first: Get above the largest class, and a new buffer of a class of 64
// MiB or more.
func mustServe(n int) {
	if !sysmem.Available(uint64(n)) {
		panic(fmt.Sprintf("%ssize %d is more than the machine can allocate now "+
			"(the runtime would end the process): bound sizes that come from outside before Get", prefix, n))
	}
}

// fallback serves a request from the heap when a Bounded pool's region is
// used up, or when an Elastic pool's budget is. The buffer has the class's
// capacity, so Put accepts it back: a Bounded pool drops it, an Elastic one
// keeps it like any other.
func (p *Pool) fallback(c, n int) []byte {
	mustServe(p.sizes[c])
	b := make([]byte, n, p.sizes[c])
	p.counts.fallbacks.Add(1)
	if p.bounded != nil {
		p.bounded.noteFallback(c, b)
	} else {
		p.elastic.noteFallback(c, b)
	}
	if checked.Enabled {
		p.trackOut(b[:cap(b)], n)
	}
	return b
}

// Put returns b to the pool. b must be a buffer from this pool's Get, with
// its start and capacity as Get returned them (its length does not matter).
// After Put the caller must not use b, nor any slice of it.
//
// A buffer whose capacity is not one of the pool's classes, or whose start
// is not where a buffer of its capacity can start (in a Bounded pool: a
// buffer of the region; in an Elastic pool: an address aligned as the Go
// heap aligns a buffer of that size), is dropped and counted in
// Stats.BadFrees: it is never filed into a class it does not fit. A buffer
// above the largest class is accepted and dropped. A second Put of a
// buffer still idle in the pool panics with "memkit/bytepool: double
// free"; so does any second Put of a Bounded pool's buffer made before
// the buffer is handed out again (but for two Puts made by two goroutines
// at the same instant, which can both pass the check of the buffer's slot
// and leave the buffer to be handed out twice). See the package
// documentation for what an Elastic pool cannot see.
func (p *Pool) Put(b []byte) {
	size := cap(b)
	if uint(size) >= p.fastEnd {
		if p.quickBounded && uint(size) < p.tabEnd { // a Bounded pool's usual Put, one call deep
			p.bounded.put(p.lookup(size), b)
			return
		}
		if uint(size) < p.quickEnd { // and past the table
			p.bounded.putRun(b)
			return
		}
		p.putSlow(b)
		return
	}
	ptr := unsafe.Pointer(unsafe.SliceData(b[:size]))
	if owned.Maybe(uintptr(ptr)) { // another memkit allocator's memory?
		p.putSlow(b)
		return
	}
	e := p.elasticOf(p.lookup(size))
	if e.size != size || e.misaligned(ptr) {
		p.putSlow(b)
		return
	}
	p.markIdle(ptr)
	if p.sampled(ptr) {
		e.puts.Add(1)
	}
	if e.short.Load() > 0 { // e.park, inlined
		e.parkShort(ptr)
		return
	}
	e.free.Put(ptr)
}

// putSlow is Put of a capacity past the lookup table or of no class, of
// a moved start, of another allocator's memory, or for a pool that is
// zeroing, checked, or Bounded past the quick path Put takes itself: it
// finds b's class, if any, and hands b to the engine to check and file.
func (p *Pool) putSlow(b []byte) {
	size := cap(b)
	c := p.exact(size)
	if c < 0 {
		p.putOdd(b)
		return
	}
	ptr := unsafe.Pointer(unsafe.SliceData(b[:size]))
	if p.bounded != nil {
		p.bounded.putClass(b, ptr, c)
		return
	}
	p.elastic.putClass(b, ptr, c)
}

// exact returns the class whose size is exactly size, or -1.
func (p *Pool) exact(size int) int {
	if size < p.minSize || size > p.maxSize {
		return -1
	}
	c := p.class(size)
	if p.sizes[c] != size {
		return -1
	}
	return c
}

// putOdd handles a Put whose capacity is not a class size.
func (p *Pool) putOdd(b []byte) {
	if checked.Enabled {
		p.checkPut(b)
	}
	size := cap(b)
	if size <= p.maxSize {
		p.counts.badFrees.Add(1)
		return
	}
	p.counts.oversizeFrees.Add(1)
	p.counts.oversizeBytes.Add(-int64(size))
	if p.budget != nil {
		p.budget.Release(int64(size))
	}
}

// Classes returns the pool's class sizes, smallest first. The caller must not
// modify the slice.
func (p *Pool) Classes() []int { return p.sizes }

// ClassSize returns the capacity Get(n) gives, or n itself if n is above the
// largest class.
func (p *Pool) ClassSize(n int) int {
	if n < 0 {
		panic(errNegative)
	}
	if n > p.maxSize {
		return n
	}
	return p.sizes[p.class(n)]
}

// Policy reports the pool's memory policy.
func (p *Pool) Policy() Policy { return p.policy }
