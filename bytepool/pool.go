package bytepool

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/sizeclass"
	"github.com/memkit/memkit/stats"
)

// Pool is a pool of []byte buffers in size classes.
//
// A Pool is safe for concurrent use by multiple goroutines, and a buffer
// taken on one goroutine may be put back on any other at the same cost.
// The zero value is not usable: a Pool must be created with [New]. A Pool
// must not be copied after first use.
//
// [Pool.Get] and [Pool.Put] cost one uncontended compare-and-swap, one store
// and a few loads each, and never allocate once the pool is warm. The
// goroutines running at one moment rarely share a shard, so the cost stays
// flat as cores are added. For a hot loop on one goroutine, a [Cache] is
// cheaper still.
//
// Get rounds a request up to its size class; the space lost is at most one
// class step (with the default 4 classes per doubling, under 20% for sizes
// above 64 bytes, 25% for the smallest). Buffers are not zeroed unless the
// pool was built [WithZeroing]. An [Elastic] pool's buffers live on the Go
// heap, one object each, and idle ones are returned to the GC within about
// three GC cycles; a [Bounded] pool's live in one Go-heap region reserved at
// New that the GC never scans.
type Pool struct {
	// Class lookup, copied from the size-class table for the hot path.
	minSize   int
	maxSize   int
	minShift  uint
	perShift  uint
	sizes     []int
	tab       []uint8 // class of n, indexed by (n+stepMask)>>stepShift, n <= tabMax
	tabMax    int
	stepMask  int
	stepShift uint

	shardMask uintptr
	shardBits uint
	shards    []shard
	depots    []depot // one per class
	magCap    []int   // per class: capacity of a shard's free list

	zeroed bool
	plain  bool // neither Bounded nor zeroing nor checked: Get has nothing to do but slice
	secret uint64
	policy Policy
	region *region // Bounded only

	budget *budget.Budget   // nil: no limit and no alert
	track  *checked.Tracker // checked build only

	decays atomic.Uint64 // decay passes run, for tests that wait on them
}

// New returns a pool configured by opts, or an error naming the first
// invalid option.
func New(opts ...Option) (*Pool, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	t, err := sizeclass.New(cfg.minSize, cfg.maxSize, cfg.perDoubling, "MinSize", "MaxSize", "ClassesPerDoubling")
	if err != nil {
		return nil, fmt.Errorf("bytepool: %w", err)
	}
	if cfg.shards < 1 || cfg.shards > 1<<16 {
		return nil, fmt.Errorf("bytepool: Shards %d must be between 1 and 65536", cfg.shards)
	}
	if cfg.policy != Elastic && cfg.policy != Bounded {
		return nil, fmt.Errorf("bytepool: Policy %d is neither Elastic nor Bounded", int(cfg.policy))
	}
	if cfg.policy == Elastic && cfg.budgetSet && cfg.budget < 1 {
		return nil, fmt.Errorf("bytepool: Budget %d must be positive", cfg.budget)
	}
	if cfg.alertFn != nil && cfg.alertAt < 1 {
		return nil, fmt.Errorf("bytepool: BudgetAlert threshold %d must be positive", cfg.alertAt)
	}
	nshards := 1
	for nshards < cfg.shards {
		nshards *= 2
	}
	p := &Pool{
		minSize:   t.Min(),
		maxSize:   t.Max(),
		minShift:  uint(bits.TrailingZeros(uint(t.Min()))),
		perShift:  uint(bits.TrailingZeros(uint(cfg.perDoubling))),
		sizes:     t.Sizes(),
		shardMask: uintptr(nshards - 1),
		shardBits: uint(bits.TrailingZeros(uint(nshards))),
		shards:    make([]shard, nshards),
		depots:    make([]depot, t.Len()),
		magCap:    make([]int, t.Len()),
		zeroed:    cfg.zeroed,
		plain:     !cfg.zeroed && cfg.policy == Elastic && !checked.Enabled,
		secret:    rand.Uint64() | 1,
		policy:    cfg.policy,
	}
	p.buildTable(t, cfg.perDoubling)
	for c, size := range p.sizes {
		p.magCap[c] = magazineSize(size)
	}
	for i := range p.shards {
		p.shards[i].lists = make([]freeList, t.Len())
	}
	if cfg.policy == Bounded {
		if cfg.budget < slabSize || cfg.budget > 1<<(31+slabShift) {
			return nil, fmt.Errorf("bytepool: Budget %d must be between 64KiB and 128TiB", cfg.budget)
		}
		if cfg.alertFn != nil {
			p.budget = budget.New(cfg.budget>>slabShift<<slabShift, cfg.alertAt, cfg.alertFn)
		}
		p.region = newRegion(cfg.budget, cfg.minSize, p.sizes, p.budget)
	} else {
		if cfg.budgetSet || cfg.alertFn != nil {
			var limit int64
			if cfg.budgetSet {
				limit = cfg.budget
			}
			p.budget = budget.New(limit, cfg.alertAt, cfg.alertFn)
		}
		armDecay(p)
	}
	if checked.Enabled {
		p.track = checked.NewTracker("bytepool")
		checked.Register(p, p.track)
	}
	return p, nil
}

// magazineSize is how many idle buffers of a class one shard (or a Cache)
// keeps: up to 64 for small classes, fewer for large ones so that a shard
// holds about 512 KiB of a class, and never fewer than 2 so that a Get+Put
// pair never reaches the depot.
func magazineSize(size int) int {
	return min(max((512<<10)/size, 2), 64)
}

// class returns the class of a request of n bytes, 0 <= n <= maxSize: one
// table load up to tabMax, the bit arithmetic of [sizeclass.Table.Index]
// above it.
func (p *Pool) class(n int) int {
	if n <= p.tabMax {
		return int(p.tab[(n+p.stepMask)>>p.stepShift])
	}
	e := uint(bits.Len(uint(n-1))) - 1
	return int((e-p.minShift)<<p.perShift) + (n-1-1<<e)>>(e-p.perShift) + 1
}

// buildTable fills the class lookup table. Every class is a multiple of the
// smallest class step (MinSize / ClassesPerDoubling), so rounding n up to a
// step never crosses a class: the table at step granularity is exact. It
// covers sizes up to 64 KiB (a 4 KiB table at the default 16-byte step),
// when there are at most 256 classes.
func (p *Pool) buildTable(t *sizeclass.Table, per int) {
	step := t.Min() / per
	p.stepShift = uint(bits.TrailingZeros(uint(step)))
	p.stepMask = step - 1
	p.tabMax = min(64<<10, t.Max())
	if t.Len() > 256 {
		p.tabMax = -1
		return
	}
	p.tab = make([]uint8, p.tabMax>>p.stepShift+1)
	for i := range p.tab {
		p.tab[i] = uint8(t.Index(i << p.stepShift))
	}
}

// lockShard locks and returns the calling goroutine's shard, chosen by a
// hash of an address on its stack. Goroutine stacks do not overlap, so
// goroutines spread over the shards, and a goroutine's own calls land on
// the same, cache-warm shard while its stack stays in one 2 KiB window. If
// that shard is busy (another goroutine hashed to it and holds it), it takes
// the next free one instead of waiting: any shard can serve any request.
func (p *Pool) lockShard() *shard {
	var marker byte
	h := (uintptr(unsafe.Pointer(&marker)) >> 11) * hashMul >> (bits.UintSize - 16)
	if s := &p.shards[h&p.shardMask]; s.mu.CompareAndSwap(0, 1) {
		return s
	}
	return p.lockShardSlow(h)
}

// hashMul is the Fibonacci hashing multiplier (2^64/φ), cut to the word size.
const hashMul = uintptr(0x9E3779B97F4A7C15 & uint64(^uintptr(0)))

func (p *Pool) lockShardSlow(h uintptr) *shard {
	for i := uintptr(1); ; i++ {
		s := &p.shards[(h+i)&p.shardMask]
		if s.mu.Load() == 0 && s.mu.CompareAndSwap(0, 1) {
			return s
		}
		if i&p.shardMask == 0 {
			runtime.Gosched() // every shard is busy: let a holder run
		}
	}
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
// n < 0.
//
// The buffer holds what its previous user wrote (but for its first 8 bytes,
// which an Elastic pool uses to mark idle buffers and clears) unless the
// pool was built [WithZeroing]. Hand it back with Put when done; a buffer
// never returned is simply collected by the GC (Elastic) or stays out of
// the region (Bounded).
func (p *Pool) Get(n int) []byte {
	if uint(n) > uint(p.maxSize) {
		return p.getOversize(n)
	}
	c := p.class(n)
	s := p.lockShard()
	l := &s.lists[c]
	ptr := l.pop()
	if ptr == nil {
		ptr = p.refill(s, c) // unlocks s
		if ptr == nil {
			return p.fallback(c, n)
		}
	} else {
		l.allocs++
		s.unlock()
	}
	return p.handOut(ptr, c, n)
}

// handOut turns an idle buffer of class c into the slice Get returns.
func (p *Pool) handOut(ptr unsafe.Pointer, c, n int) []byte {
	if !p.plain {
		return p.handOutChecked(ptr, c, n)
	}
	clearIdle(ptr)
	return unsafe.Slice((*byte)(ptr), p.sizes[c])[:n]
}

// An Elastic pool keeps no state per buffer, but it owns the bytes of the
// buffers it holds idle: Put writes a word derived from the buffer's address
// and the pool's random secret into the first 8 bytes (every class has at
// least 8), and handing the buffer out clears it. A Put that finds the word
// already there is a second Put of a buffer still idle in the pool, and
// panics as a double free: two O(1) word accesses on a cache line the
// caller has just used. A second Put after the pool handed the buffer out
// again finds the new user's bytes instead and cannot be told from a first:
// only the checked build (or a Bounded pool's bitmap) catches that one. The
// odds that a user's own bytes equal the word by chance are 2^-64.

// markIdle marks the buffer at ptr idle, panicking if it already is.
func (p *Pool) markIdle(ptr unsafe.Pointer) {
	w := (*[8]byte)(ptr)
	want := p.idleWord(ptr)
	if binary.NativeEndian.Uint64(w[:]) == want {
		panic(errDoubleFree)
	}
	binary.NativeEndian.PutUint64(w[:], want)
}

func (p *Pool) idleWord(ptr unsafe.Pointer) uint64 { return uint64(uintptr(ptr)) ^ p.secret }

// clearIdle clears the idle mark of a buffer being handed out.
func clearIdle(ptr unsafe.Pointer) { *(*[8]byte)(ptr) = [8]byte{} }

// handOutChecked is handOut for a Bounded or zeroing pool, or any pool in
// the checked build.
func (p *Pool) handOutChecked(ptr unsafe.Pointer, c, n int) []byte {
	size := p.sizes[c]
	if checked.Enabled {
		p.verifyPoison(unsafe.Slice((*byte)(ptr), size))
	}
	if p.region != nil {
		p.region.markOut(ptr, c, size)
	}
	b := unsafe.Slice((*byte)(ptr), size)
	if p.zeroed {
		clear(b)
	}
	if checked.Enabled {
		p.trackOut(b, n)
	}
	return b[:n]
}

// TryGet is like Get but reports false, leaving the pool unchanged but for
// Stats.Failures, instead of falling back to the heap: when a Bounded pool's
// region is used up, when an Elastic pool with a [WithBudget] limit would
// need a new buffer past it, or when n is above the largest class. An
// Elastic pool without a limit never fails for n within the classes.
func (p *Pool) TryGet(n int) ([]byte, bool) {
	if n < 0 {
		panic(errNegative)
	}
	if n > p.maxSize {
		p.countFailure()
		return nil, false
	}
	c := p.class(n)
	s := p.lockShard()
	ptr := s.lists[c].pop()
	if ptr == nil {
		ptr = p.refill(s, c)
		if ptr == nil {
			p.countFailure()
			return nil, false
		}
	} else {
		s.lists[c].allocs++
		s.unlock()
	}
	return p.handOut(ptr, c, n), true
}

const errNegative = "memkit/bytepool: negative size"

func (p *Pool) getOversize(n int) []byte {
	if n < 0 {
		panic(errNegative)
	}
	b := make([]byte, n)
	s := p.lockShard()
	s.oversizeAllocs++
	s.oversizeBytes += uint64(cap(b))
	s.fallbacks++
	s.unlock()
	if p.budget != nil {
		p.budget.Charge(int64(n))
	}
	if checked.Enabled {
		p.trackOut(b, n)
	}
	return b
}

// fallback serves a request from the heap when a Bounded pool's region is
// used up, or when an Elastic pool's budget is. The buffer has the class's
// capacity, so Put accepts it back: a Bounded pool drops it, an Elastic one
// keeps it like any other.
func (p *Pool) fallback(c, n int) []byte {
	b := make([]byte, n, p.sizes[c])
	s := p.lockShard()
	s.lists[c].allocs++
	s.lists[c].heapLive++
	s.fallbacks++
	s.unlock()
	if p.budget != nil {
		p.budget.Charge(int64(cap(b)))
	}
	if checked.Enabled {
		p.trackOut(b[:cap(b)], n)
	}
	return b
}

func (p *Pool) countFailure() {
	s := p.lockShard()
	s.failures++
	s.unlock()
}

// refill is Get's slow path, entered with s locked and its class-c list
// empty. It moves a batch from the depot (or, for a Bounded pool, carves new
// buffers) into the list, counts the allocation and returns one buffer with
// s unlocked. It returns nil, having counted nothing, when a Bounded pool has
// no buffer of class c left anywhere, or when an Elastic pool would need a
// new buffer past its budget.
func (p *Pool) refill(s *shard, c int) unsafe.Pointer {
	var batch [64]unsafe.Pointer
	want := batch[:max(p.magCap[c]/2, 1)]
	l := &s.lists[c]
	d := &p.depots[c]
	d.mu.Lock()
	n := d.take(want)
	d.mu.Unlock()
	if n == 0 && p.region != nil {
		n = p.region.carve(c, p.sizes[c], want)
	}
	if n > 0 {
		if l.bufs == nil {
			l.bufs = make([]unsafe.Pointer, 0, p.magCap[c])
		}
		l.bufs = append(l.bufs, want[1:n]...)
		l.allocs++
		s.unlock()
		return want[0]
	}
	if p.region != nil {
		s.unlock()
		return p.steal(s, c)
	}
	// Elastic and nothing idle: a new buffer from the heap.
	if l.bufs == nil {
		l.bufs = make([]unsafe.Pointer, 0, p.magCap[c])
	}
	if p.budget != nil {
		s.unlock()
		return p.growCharged(c)
	}
	l.allocs++
	l.grows++
	s.unlock()
	return p.newBuffer(c)
}

// newBuffer makes a new buffer of class c from the heap. In the checked
// build it is poisoned, as every idle buffer is.
func (p *Pool) newBuffer(c int) unsafe.Pointer {
	b := make([]byte, p.sizes[c])
	if checked.Enabled {
		checked.Fill(b, checked.PoisonByte)
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

// growCharged makes a new buffer of class c for an Elastic pool with a
// budget, charging it first, and counts it; it returns nil if the buffer
// would pass the budget. No lock is held while it charges.
func (p *Pool) growCharged(c int) unsafe.Pointer {
	if !p.budget.TryCharge(int64(p.sizes[c])) {
		return nil
	}
	s := p.lockShard()
	s.lists[c].allocs++
	s.lists[c].grows++
	s.unlock()
	return p.newBuffer(c)
}

// steal takes one idle class-c buffer from another shard, for a Bounded pool
// whose region and depot are empty. It returns nil if there is none.
func (p *Pool) steal(home *shard, c int) unsafe.Pointer {
	for i := range p.shards {
		s := &p.shards[i]
		if s == home {
			continue
		}
		s.lock()
		ptr := s.lists[c].pop()
		s.unlock()
		if ptr != nil {
			home = p.lockShard()
			home.lists[c].allocs++
			home.unlock()
			return ptr
		}
	}
	return nil
}

// Put returns b to the pool. b must be a buffer from this pool's Get, with
// its start and capacity as Get returned them (its length does not matter).
// After Put the caller must not use b, nor any slice of it.
//
// A buffer whose capacity is not one of the pool's classes, or, in a Bounded
// pool, that does not start a buffer of the region, is dropped and counted
// in Stats.BadFrees: it is never filed into a class it does not fit. A
// buffer above the largest class is accepted and dropped. Putting a Bounded
// pool's buffer twice panics with "memkit/bytepool: double free"; an
// Elastic pool cannot tell a second Put from a first, which is why memory
// put twice must never be used again (see the memkitdebug build tag).
func (p *Pool) Put(b []byte) {
	if checked.Enabled {
		p.checkPut(b)
	}
	size := cap(b)
	c := p.exact(size)
	if c < 0 {
		p.putOdd(size)
		return
	}
	ptr := unsafe.Pointer(unsafe.SliceData(b[:size]))
	if p.region != nil {
		if !p.release(ptr, c, size) {
			return
		}
	} else if !checked.Enabled { // the checked build poisons idle buffers instead
		p.markIdle(ptr)
	}
	s := p.lockShard()
	l := &s.lists[c]
	if len(l.bufs) < cap(l.bufs) {
		l.bufs = append(l.bufs, ptr)
		l.frees++
		s.unlock()
		return
	}
	p.spill(s, c, ptr) // unlocks s
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
func (p *Pool) putOdd(size int) {
	s := p.lockShard()
	if size > p.maxSize {
		s.oversizeFrees++
		s.oversizeBytes -= uint64(size)
	} else {
		s.badFrees++
	}
	s.unlock()
	if size > p.maxSize && p.budget != nil {
		p.budget.Release(int64(size))
	}
}

const errDoubleFree = "memkit/bytepool: double free"

// release checks a Bounded pool's buffer on Put and clears its out bit. It
// reports whether the buffer goes back on a free list: false for a heap
// fallback buffer (counted as freed and dropped) and for a slice that is not
// a region buffer's start (counted as a bad free). It panics on a double free.
func (p *Pool) release(ptr unsafe.Pointer, c, size int) bool {
	r := p.region
	if !r.contains(ptr) {
		p.dropFallback(c, size)
		return false
	}
	w, m, ok := r.bit(ptr, c, size)
	if !ok {
		s := p.lockShard()
		s.badFrees++
		s.unlock()
		return false
	}
	if w.And(^m)&m == 0 {
		panic(errDoubleFree)
	}
	return true
}

// dropFallback counts the Put of a Bounded pool's heap fallback buffer of
// class c (or foreign memory of a class's size, which looks the same) and
// lets the GC have it.
func (p *Pool) dropFallback(c, size int) {
	s := p.lockShard()
	s.lists[c].frees++
	s.lists[c].heapLive--
	s.unlock()
	if p.budget != nil {
		p.budget.Release(int64(size))
	}
}

// spill is Put's slow path, entered with s locked and its class-c list full:
// it moves half the list to the depot, pushes ptr and unlocks s.
func (p *Pool) spill(s *shard, c int, ptr unsafe.Pointer) {
	l := &s.lists[c]
	if cap(l.bufs) == 0 {
		l.bufs = make([]unsafe.Pointer, 0, p.magCap[c])
	}
	var dropped int64
	if len(l.bufs) == cap(l.bufs) {
		half := len(l.bufs) / 2
		if half == 0 {
			half = len(l.bufs)
		}
		move := l.bufs[len(l.bufs)-half:]
		d := &p.depots[c]
		d.mu.Lock()
		dropped = p.stash(d, c, move)
		d.mu.Unlock()
		clear(move)
		l.bufs = l.bufs[:len(l.bufs)-half]
	}
	l.bufs = append(l.bufs, ptr)
	l.frees++
	s.unlock()
	if dropped > 0 {
		p.budget.Release(dropped)
	}
}

// stash gives bufs, idle buffers of class c, to the class's depot d, whose
// lock the caller holds. An Elastic pool over its budget keeps only what
// the budget allows and drops the rest to the GC, counting them as
// releases; stash returns the bytes it dropped, for the caller to release
// from the budget once it holds no lock.
func (p *Pool) stash(d *depot, c int, bufs []unsafe.Pointer) int64 {
	var dropped int64
	if b := p.budget; b != nil && p.region == nil && b.Limit() > 0 {
		if over := b.Used() - b.Limit(); over > 0 {
			size := int64(p.sizes[c])
			k := int(min((over+size-1)/size, int64(len(bufs))))
			bufs = bufs[k:]
			d.releases += uint64(k)
			dropped = int64(k) * size
		}
	}
	d.give(bufs)
	return dropped
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

// armDecay starts the Elastic pool's decay: a sentinel object whose
// finalizer runs once after every GC cycle, calls decay, and re-arms itself.
// It holds the pool weakly, so an unreachable pool is still collected, and
// then the sentinel stops.
func armDecay(p *Pool) {
	s := &sentinel{pool: weak.Make(p)}
	runtime.SetFinalizer(s, (*sentinel).tick)
}

type sentinel struct {
	pool weak.Pointer[Pool]
	_    [16]byte // not tiny-allocated: finalizers on tiny objects may never run
}

func (s *sentinel) tick() {
	p := s.pool.Value()
	if p == nil {
		return
	}
	p.decay()
	p.decays.Add(1)
	runtime.SetFinalizer(s, (*sentinel).tick)
}

// decay runs after each GC cycle: every shard's idle buffers go to the
// depots, whose older generation is dropped to the GC. A buffer idle through
// two cycles is therefore gone after the third; a busy pool loses nothing it
// uses, since shards refill from the depot in batches.
func (p *Pool) decay() {
	var dropped int64
	for c := range p.depots {
		d := &p.depots[c]
		d.mu.Lock()
		k := d.rotate()
		d.releases += uint64(k)
		d.mu.Unlock()
		dropped += int64(k) * int64(p.sizes[c])
	}
	// Lock order is shard, then depot, as in refill and spill.
	for i := range p.shards {
		s := &p.shards[i]
		s.lock()
		for c := range s.lists {
			l := &s.lists[c]
			if len(l.bufs) == 0 {
				continue
			}
			d := &p.depots[c]
			d.mu.Lock()
			dropped += p.stash(d, c, l.bufs)
			d.mu.Unlock()
			clear(l.bufs)
			l.bufs = l.bufs[:0]
		}
		s.unlock()
	}
	if p.budget != nil && dropped > 0 {
		p.budget.Release(dropped)
	}
}

// ReadStats fills *st with a snapshot of the pool's statistics and a row per
// size class. It does not allocate once st.Classes has room for every class.
// It takes each shard's lock in turn, never all at once. Counters held by
// live Caches are included as of their last refill, spill or Release.
func (p *Pool) ReadStats(st *stats.Stats) {
	st.Reset()
	st.Classes = p.AppendClassStats(st.Classes)
	regionSlabs := 0
	if p.region != nil {
		regionSlabs = p.region.usedSlabs()
	}
	for i := range st.Classes {
		c := &st.Classes[i]
		st.InUseBytes += c.InUseBytes
		st.ReservedBytes += c.ReservedBytes
		st.LiveObjects += c.LiveObjects
		st.Allocs += c.Allocs
		st.Frees += c.Frees
		st.Grows += c.Grows
		st.Releases += c.Releases
	}
	var oversizeBytes uint64
	for i := range p.shards {
		s := &p.shards[i]
		s.lock()
		st.Allocs += s.oversizeAllocs
		st.Frees += s.oversizeFrees
		oversizeBytes += s.oversizeBytes
		st.HeapFallbacks += s.fallbacks
		st.Failures += s.failures
		st.BadFrees += s.badFrees
		s.unlock()
	}
	// Foreign buffers put back can drive these below zero.
	oversizeBytes = uint64(max(int64(oversizeBytes), 0))
	st.InUseBytes += oversizeBytes
	st.ReservedBytes += oversizeBytes
	if p.region != nil {
		// The region is reserved whole at New, not just the slabs the
		// classes took so far; heap fallbacks and oversize buffers come on
		// top of it.
		st.ReservedBytes += uint64(len(p.region.mem) - regionSlabs<<slabShift)
	}
	st.LiveObjects = sat(st.Allocs, st.Frees)
}

// AppendClassStats appends a row per size class to dst and returns it.
// It takes each shard's lock once, for all classes, and each depot's once.
func (p *Pool) AppendClassStats(dst []stats.ClassStats) []stats.ClassStats {
	base := len(dst)
	for _, size := range p.sizes {
		dst = append(dst, stats.ClassStats{Size: uint64(size)})
	}
	rows := dst[base:]
	// Until the rows are finished, ReservedBytes holds the class's heapLive
	// summed over shards: a two's-complement sum, which a foreign buffer
	// put back can drive below zero.
	for i := range p.shards {
		s := &p.shards[i]
		s.lock()
		for c := range rows {
			l, row := &s.lists[c], &rows[c]
			row.Allocs += l.allocs
			row.Frees += l.frees
			row.Grows += l.grows
			row.IdleObjects += uint64(len(l.bufs))
			row.ReservedBytes += l.heapLive
		}
		s.unlock()
	}
	for c := range rows {
		row := &rows[c]
		d := &p.depots[c]
		d.mu.Lock()
		row.Allocs += d.allocs
		row.Frees += d.frees
		row.Grows += d.grows
		row.Releases = d.releases
		row.IdleObjects += uint64(len(d.primary) + len(d.victim))
		d.mu.Unlock()
		heapLive := uint64(max(int64(row.ReservedBytes), 0))
		row.LiveObjects = sat(row.Allocs, row.Frees)
		row.InUseBytes = row.LiveObjects * row.Size
		if p.region != nil {
			slabs := p.region.classSlabs(c)
			row.Grows += uint64(slabs)
			row.ReservedBytes = uint64(slabs)<<slabShift + heapLive*row.Size
		} else {
			row.ReservedBytes = row.InUseBytes + row.IdleObjects*row.Size
		}
	}
	return dst
}

// sat returns a-b, or 0 if b > a (a foreign buffer put back can make frees
// outrun allocs).
func sat(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
