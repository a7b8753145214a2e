package bytepool

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/keep"
	"github.com/memkit/memkit/internal/owned"
	padding "github.com/memkit/memkit/internal/shard"
	"github.com/memkit/memkit/internal/sysmem"
	"github.com/memkit/memkit/stats"
)

// elasticClass is one class of an Elastic pool: a sync.Pool of idle
// buffers, each held as the unsafe.Pointer to its first byte (pointer
// shaped, so Put stores it in the interface without boxing, and Get
// rebuilds the slice from it and the class size), and the class's counters.
//
// sync.Pool keeps a list per P, so Get and Put take no lock and no
// atomic instruction. It would drop what stayed idle through two GC
// cycles; the pool's tending step moves idle buffers into the class's
// reserve before it can (see retain.go), and a Get that finds the sync.Pool
// empty looks there before it makes a buffer.
type elasticClass struct {
	elasticFields
	_ [elasticStride - unsafe.Sizeof(elasticFields{})]byte
}

// elasticStride is the size of an elasticClass: a power of two, so that
// finding a class is a shift.
const elasticStride = 512

// elasticFields is a class's state in three parts, a cache line of padding
// between each two: what every Get and Put reads (and only slow paths
// write); the counters, which a Get or Put of a sampled buffer writes; and
// what slow paths alone touch. The padding, not the alignment, keeps the
// parts off each other's lines: the class array does not start on a line
// (the Go heap puts a header of 8 bytes before an object of this size that
// holds pointers). With the counters on the line Put reads the shortfall
// from, a P whose buffer was in the sample made every other P's Put miss:
// GetPutParallel of 64 bytes from the default pool ran 2.3× its usual time
// in about one process in twenty (3 of 56), and a probe's Get+Put of one
// goroutine took 24-31 ns against 12 while another added to the counters.
type elasticFields struct {
	free      sync.Pool
	size      int
	alignMask atomic.Uintptr // every buffer of the class starts at a multiple of alignMask+1 (see misaligned)
	short     atomic.Int64   // > 0: Put files into the reserve (see retain.go)
	_         padding.Pad

	// Sampled counts (see [Pool.sampled]): Get and Put by the Pool of the
	// buffers in the sample; those Caches took from the pool and gave back
	// to it; and those idle in Caches (a two's-complement sum of the
	// changes Caches publish).
	gets, puts   atomic.Uint64
	cgets, cputs atomic.Uint64
	cidle        atomic.Uint64

	// Exact counts, touched on slow paths only.
	cacheAllocs, cacheFrees atomic.Uint64 // folded in by Caches
	grows                   atomic.Uint64 // buffers made
	releases                atomic.Uint64 // of those, collected by the GC
	_                       padding.Pad

	budget *budget.Budget // the pool's, or nil
	res    reserve        // the idle buffers behind free (see retain.go)

	// fin is the finalizer of the class's buffers, a func(*byte) that
	// counts one collected: made once, so that setting it allocates nothing.
	fin any
}

// elasticEngine is an Elastic pool's engine: everything an Elastic pool
// does that a Bounded one does not lives in this file and retain.go. The
// Pool façade (pool.go) keeps copies of what its inlined fast path reads
// (the classes' base address, the sample's seed and bound) and calls the
// engine directly past it, never through an interface.
type elasticEngine struct {
	classes []elasticClass // one per class
	ret     retention      // the reserves behind the sync.Pools, and their tending
	p       *Pool          // the façade: class table, shared counters, budget, checked-build tracker
}

// newElastic returns the engine of p, an Elastic pool configured by cfg: a
// class per size, each with its sync.Pool and its reserve; and sets p's
// budget if cfg asks for one, and p's copies of the engine's hot fields.
func newElastic(p *Pool, cfg *config) *elasticEngine {
	p.budget = cfg.New()
	e := &elasticEngine{classes: make([]elasticClass, len(p.sizes)), p: p}
	p.elasticBase = unsafe.Pointer(&e.classes[0])
	for c, size := range p.sizes {
		ec := &e.classes[c]
		ec.size = size
		ec.alignMask.Store(initialAlignMask(size))
		ec.budget = p.budget
		ec.fin = func(*byte) { collected(ec) }
		if size >= cfg.lockedFrom {
			ec.res.always = true
			ec.short.Store(lossBias)
		}
	}
	p.fastEnd = min(p.fastEnd, lockedEnd(p.sizes, cfg.lockedFrom))
	e.newRetention()
	return e
}

// lockedEnd returns the smallest size whose class is locked (of lockedFrom
// bytes or more, see [WithLockedFrom]), as Get's fast path bound: a Get
// below it takes a sync.Pool class, and so does a Put of a capacity below
// it, so that the fast path never touches a locked class's sync.Pool
// (a Get of an emptied sync.Pool allocates its per-P array).
func lockedEnd(sizes []int, lockedFrom int) uint {
	for c, size := range sizes {
		if size >= lockedFrom {
			if c == 0 {
				return 0
			}
			return uint(sizes[c-1]) + 1
		}
	}
	return ^uint(0)
}

// elasticOf returns class c of an Elastic pool, c < len(classes), which
// the lookup table guarantees: a shift and an add, no bounds check.
func (p *Pool) elasticOf(c uint8) *elasticClass {
	return (*elasticClass)(unsafe.Add(p.elasticBase, uintptr(c)*elasticStride))
}

// getClass is Get of class c past the façade's fast path: a size past the
// lookup table, or a zeroing or checked pool.
func (e *elasticEngine) getClass(c, n int) []byte {
	ec := &e.classes[c]
	var ptr unsafe.Pointer
	if !ec.res.always { // a class that keeps its idle buffers in the reserve has nothing in its sync.Pool
		ptr, _ = ec.free.Get().(unsafe.Pointer)
	}
	if ptr == nil {
		mustServe(ec.size)
		return e.getNew(c, n)
	}
	if e.p.sampled(ptr) {
		ec.gets.Add(1)
	}
	return e.p.handOut(ptr, c, n)
}

// tryTake is TryGet's: an idle buffer of class c, or a new one if the
// budget and the machine allow, counted; nil if neither.
func (e *elasticEngine) tryTake(c int) unsafe.Pointer {
	ec := &e.classes[c]
	var ptr unsafe.Pointer
	if !ec.res.always {
		ptr, _ = ec.free.Get().(unsafe.Pointer)
	}
	if ptr == nil {
		ptr = ec.pop()
	}
	if ptr == nil && sysmem.Available(uint64(ec.size)) {
		ptr = e.takeIdle(c)
	}
	if ptr != nil && e.p.sampled(ptr) {
		ec.gets.Add(1)
	}
	return ptr
}

// noteFallback notes a heap fallback buffer of class c, made past the
// budget: the class's alignment admits it, and its Put will be counted.
func (e *elasticEngine) noteFallback(c int, b []byte) {
	ec := &e.classes[c]
	ptr := unsafe.Pointer(unsafe.SliceData(b))
	ec.noteAlignment(ptr)
	if e.p.sampled(ptr) {
		ec.gets.Add(1)
	}
}

// putClass is Put of a buffer whose capacity is class c's, past the
// façade's fast path: a capacity past the lookup table, a moved start,
// another allocator's memory, or a zeroing or checked pool.
func (e *elasticEngine) putClass(b []byte, ptr unsafe.Pointer, c int) {
	p := e.p
	var rec *checked.Record
	if checked.Enabled {
		rec = p.checkPut(b)
	}
	ec := &e.classes[c]
	if ec.misaligned(ptr) {
		p.counts.badFrees.Add(1) // its start moved: no buffer of this class starts there
		return
	}
	if checked.Enabled {
		if p.sampled(ptr) {
			ec.puts.Add(1)
		}
		p.hold(rec, ptr, cap(b), func() { ec.free.Put(ptr) })
		return
	}
	refuseOwned(ptr)
	p.markIdle(ptr)
	if p.sampled(ptr) {
		ec.puts.Add(1)
	}
	ec.park(ptr)
}

// rows fills the pool's class rows.
func (e *elasticEngine) rows(rows []stats.ClassStats) {
	scale := e.p.scale()
	for c := range rows {
		row, ec := &rows[c], &e.classes[c]
		// Read the puts before the gets: a buffer is got before it is put,
		// so a snapshot taken while both move sees no more puts than gets.
		puts, cputs, cidle := ec.puts.Load(), ec.cputs.Load(), ec.cidle.Load()
		gets, cgets := ec.gets.Load(), ec.cgets.Load()
		row.Allocs = gets*scale + ec.cacheAllocs.Load()
		row.Frees = puts*scale + ec.cacheFrees.Load()
		row.LiveObjects = sat(gets+cgets, puts+cputs+cidle) * scale
		row.InUseBytes = row.LiveObjects * row.Size
		releases := ec.releases.Load()
		row.Grows = ec.grows.Load()
		row.Releases = releases
		made := sat(row.Grows, releases)
		row.IdleObjects = sat(made, row.LiveObjects)
		row.ReservedBytes = max(made, row.LiveObjects) * row.Size
	}
}

// A moved start. An Elastic pool keeps no state per buffer, so a Put of
// b[k:] whose capacity is another class's looks like a buffer of that
// class, except for its address: the Go heap starts every buffer of 16
// bytes or more on a 16-byte boundary (each of its size classes from 16
// bytes up is a multiple of 16, and spans start on pages). A class starts
// out expecting that alignment, and grow lowers it if the heap ever hands
// out a buffer that breaks it, before the buffer is handed out; so a Put
// whose start breaks it cannot be a buffer of the class, and is dropped
// and counted. A move by a multiple of 16 keeps the alignment and is not
// seen.

// initialAlignMask is the alignment mask a class of size bytes starts with.
func initialAlignMask(size int) uintptr {
	if size >= 16 {
		return 15
	}
	return uintptr(size&-size) - 1
}

// misaligned reports whether ptr cannot start a buffer of the class.
func (e *elasticClass) misaligned(ptr unsafe.Pointer) bool {
	return uintptr(ptr)&e.alignMask.Load() != 0
}

// noteAlignment lowers the class's alignment mask to admit a buffer at ptr
// that the pool made.
func (e *elasticClass) noteAlignment(ptr unsafe.Pointer) {
	for {
		m := e.alignMask.Load()
		if uintptr(ptr)&m == 0 {
			return
		}
		e.alignMask.CompareAndSwap(m, m>>1)
	}
}

// The in-use estimate. A fast path with no owner cannot count every
// operation without a shared atomic per operation, so an Elastic pool
// counts only the buffers in a sample fixed for the pool's life: those
// whose address, hashed with the pool's seed, falls in 1 of 2^sampleBits
// (1/64). Each such buffer adds one when handed out and takes one away when
// put back (a Cache counts those it takes from the pool and gives back,
// and those it holds idle, when it refills, spills or is released), so the
// sampled count is exactly the number of sampled buffers in use, and the
// estimate of buffers in use is that count times 64, never negative.
//
// If the addresses of the L buffers in use were drawn at random, the
// estimate would have a standard deviation of sqrt(63 L), about 8 sqrt(L):
// 80% of the true value at L = 100, 8% at 10,000, under 1% past a million.
// The Go heap places a class's buffers at regular steps, and the
// multiplicative hash spreads regular steps more evenly than chance, so
// the error is smaller in practice (TestElastic_SampledInUseFollowsAModel
// measures it). Allocs and Frees of the Pool's own Get and Put are
// estimated the same way, so they count the operations on sampled buffers
// 64 times over: a workload that recycles a few buffers sees them counted
// far too often or not at all. Grows, Releases and everything else are
// exact.
const sampleBits = 6

// sampled reports whether the buffer at ptr is in the sample: whether the
// hash of its address plus the pool's random seed is at most sampleMax, 1
// in 2^k addresses for sampleMax = 2^(64-k)-1. (Adding the seed keeps
// regular steps regular, so the hash still spreads them evenly; it makes
// which buffers are sampled differ from pool to pool and run to run, so
// that no workload is always the one whose few buffers all are.)
func (p *Pool) sampled(ptr unsafe.Pointer) bool {
	return keep.Sampled(ptr, p.sampleSeed, p.sampleMax)
}

// countSampled returns how many of bufs are in the sample.
func (p *Pool) countSampled(bufs []unsafe.Pointer) uint64 {
	var k uint64
	for _, ptr := range bufs {
		if p.sampled(ptr) {
			k++
		}
	}
	return k
}

// sampleMaxFor returns the sampleMax that samples 1 in 2^k buffers.
func sampleMaxFor(k int) uintptr { return ^uintptr(0) >> k }

// scale is the weight of one sampled count.
func (p *Pool) scale() uint64 { return 1 << (bits.OnesCount(uint(^p.sampleMax))) }

// getNew is Get's slow path: no idle buffer of class c in its sync.Pool,
// on this P nor any other to steal. It takes one from the reserve, or
// makes one.
func (e *elasticEngine) getNew(c, n int) []byte {
	ptr := e.takeIdle(c)
	if ptr == nil {
		return e.p.fallback(c, n)
	}
	if e.p.sampled(ptr) {
		e.classes[c].gets.Add(1)
	}
	return e.p.handOut(ptr, c, n)
}

// grow makes a new buffer of class c, charging the budget if there is one;
// it returns nil, making nothing, if the buffer would pass the budget. A
// finalizer counts the buffer in Releases, and gives its bytes back to the
// budget, when the GC collects it: the class's one func, so that the buffer
// costs make's one allocation and no more (a cleanup would cost two:
// runtime.AddCleanup boxes its argument and records the call). In the
// checked build the buffer is poisoned, as every idle buffer is. It starts
// the tending timer, since the buffer will be idle some day.
func (e *elasticEngine) grow(c int) unsafe.Pointer {
	ec := &e.classes[c]
	if ec.budget != nil && !ec.budget.TryCharge(int64(ec.size)) {
		if checked.Enabled && e.p.flushQuarantine() {
			if ptr, _ := ec.free.Get().(unsafe.Pointer); ptr != nil {
				return ptr
			}
			if ptr := ec.pop(); ptr != nil {
				return ptr
			}
		}
		return nil
	}
	// Under 16 bytes the Go heap would pack the buffer with others in one
	// tiny allocation, whose finalizer may never run.
	b := make([]byte, max(ec.size, 16))[:ec.size]
	if checked.Enabled {
		checked.Fill(b, checked.PoisonByte)
	}
	ptr := unsafe.SliceData(b)
	ec.noteAlignment(unsafe.Pointer(ptr))
	ec.grows.Add(1)
	runtime.SetFinalizer(ptr, ec.fin)
	e.arm()
	return unsafe.Pointer(ptr)
}

// collected runs once the GC has found a buffer of class e unreachable; it
// frees the buffer at its next cycle.
func collected(e *elasticClass) {
	e.releases.Add(1)
	if e.budget != nil {
		e.budget.Release(int64(e.size))
	}
}

// refuseOwned panics if the buffer at ptr, put into an Elastic pool, is
// memory another memkit allocator owns (see internal/owned): the pool
// would give it a second owner.
func refuseOwned(ptr unsafe.Pointer) { owned.MustBeUnowned(prefix+"Put", uintptr(ptr)) }
