package bytepool

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/clock"
	"github.com/memkit/memkit/internal/shard"
)

// Retention of an Elastic pool's idle buffers. sync.Pool alone drops what
// stayed idle through two GC cycles, and a program moving large messages
// runs a GC every few of them: its pools would never stay warm. So each
// class keeps a reserve behind its sync.Pool, and a tending step, run after
// every GC cycle and by a timer while the pool holds idle buffers, moves
// every buffer idle in the sync.Pool into the reserve before the GC can
// drop it. A Get that finds the sync.Pool empty takes from the reserve
// before it makes a buffer.
//
// What the reserve keeps follows demand, by its low-water mark: the fewest
// buffers it held at any moment of a retention period. A Get pops from the
// reserve only when no idle buffer is left in the sync.Pool, so those were
// idle through the whole period while the pool served every Get of it; at
// the end of the period the class gives back that many, its oldest, and
// starts the next with the mark at what it holds then. Buffers the tending
// step finds in the sync.Pool join the reserve without lowering the mark,
// so each is kept for one whole period more. Periods run from one of the
// timer's steps to the next (see tend). Hence, in time: the buffers the
// peak of a period needed stay through the next period; an idle buffer is
// given back at most two periods after demand last reached it; and the GC
// frees it at its second cycle after that (the first runs its finalizer).
// The step reads a monotonic clock (internal/clock) through an injectable
// func, so tests drive it with a clock of their own.

// RetentionPeriod is the retention period of an [Elastic] pool: at the end
// of each, a class gives back the idle buffers no Get needed during all of
// it (docs/bytepool.md, "Retention", has the whole rule).
const RetentionPeriod = time.Second

// drainMax bounds the buffers one tending step takes out of a class's
// sync.Pool, in case other goroutines keep putting as fast as it takes.
const drainMax = 1 << 16

// retention is the tending state of an Elastic pool.
type retention struct {
	mu    sync.Mutex // serializes tend
	start int64      // the clock when the current period began
	clock func() int64
	armed atomic.Bool
	self  weak.Pointer[elasticEngine] // for the GC hook and the timer, which must not keep the pool alive
}

// reserve is a class's idle buffers behind its sync.Pool, oldest first,
// and its low-water mark.
type reserve struct {
	mu   sync.Mutex
	bufs []unsafe.Pointer
	low  int    // the fewest buffers held since the period began
	gone uint64 // buffers given back

	// Losses (see noteLosses): the most releases not explained by buffers
	// given back seen so far; whether the class lost buffers in this
	// period; whether it is in loss mode because it did; whether, in loss
	// mode, every Put files into the reserve (the shortfall holds
	// lossBias); and, while it does, the buffers taken from the reserve
	// since the last tending step and how many make the class hot.
	lostMax                 int64
	lostNow, losing, filing bool
	pops, hotAt             int
	always                  bool // a locked class (WithLockedFrom): every Put files into the reserve
}

// What sync.Pool drops. The tending step empties every sync.Pool it can
// reach, but a sync.Pool Get takes from another P's list only what that P
// has in its shared part, not the one buffer in its private slot: a class
// that no Get on that P asks for keeps a buffer there through two GC cycles
// and loses it to the GC. And a GC cycle that comes before the tending step
// after the previous one (a burst of cycles) drops what stayed idle through
// both. Either way sync.Pool drops about one buffer per P per class per GC
// cycle. So Put files a buffer into the reserve instead of the sync.Pool
// while the class is short (elasticFields.short > 0), which it is in two
// cases:
//
//   - A Get that found neither tier holding a buffer made one and added one
//     to the shortfall; the next Put takes it off.
//   - The class lost buffers to the GC: its Releases, which the finalizers
//     count, went past what its reserve gave back (their running maximum,
//     so that buffers given back and not yet finalized do not look like a
//     loss when they are). It is in loss mode until the end of the first
//     period with no new loss. A buffer a user never puts back counts as
//     lost, too, so a class may stay in loss mode for good (the
//     package-level pool does).
//
// Loss mode has two stages, because what sync.Pool drops is a few buffers
// per GC cycle, whatever the class's traffic. A tending step that sees a
// new loss makes every Put of the class file into the reserve (the
// shortfall gets lossBias), so that no idle buffer waits where the GC can
// drop it: for a class with few Gets per GC cycle, a few buffers dropped
// per cycle would be most of what its Gets need. The reserve counts the
// Gets that take from it; once hotGets of them come between two tending
// steps, the class is hot: it takes lossBias off, and from then on each
// step only raises the shortfall to what the reserve lacks of a stock of
// GOMAXPROCS buffers (see stock), so that the next Puts refill it and the
// Puts after them go to the sync.Pool again, where the Gets find them; a
// warm Get+Put then costs what it costs in a class that lost nothing. A
// hot class's drops are a few buffers against hundreds of Gets per cycle,
// which the stock makes up for. The next step that sees a new loss starts
// over: hotGets more Gets through the reserve.
//
// Put reads the shortfall with one load from the class's first 64 bytes,
// where it reads the class size; only slow paths write it.

// lossBias is what a class that files every Put into the reserve adds to
// its shortfall (one in loss mode's first stage, or a locked class, see
// [WithLockedFrom]): more than any count of Gets can take off.
const lossBias = 1 << 40

// hotGets is how many Gets a class in loss mode must take from the reserve
// between two tending steps to leave the mode's first stage: with one
// buffer per P dropped per GC cycle at most, fewer than 1 in 128 of a hot
// class's Gets can find its sync.Pool short for a drop.
func hotGets() int { return 128 * runtime.GOMAXPROCS(0) }

// A locked class (of WithLockedFrom's size or more, 256 KiB by default)
// files every Put into the reserve, as if it were losing buffers for good,
// and its Gets never look into its sync.Pool: for buffers this large a
// mutex costs nothing next to their use (a Get and Put pair costs tens of
// nanoseconds more; writing 256 KiB takes microseconds); a sync.Pool would
// keep the one buffer in each P's private slot out of the tending step's
// reach, so that an idle buffer of megabytes could wait for two GC cycles
// instead of two periods; and a sync.Pool allocates its per-P storage
// again after every GC cycle, which a program moving large buffers runs
// often.

// newRetention sets up e's tending after every GC cycle
// (shard.AfterEachGC, which holds e weakly and costs no allocation per
// cycle), and a cleanup that empties the reserves once e (and so its pool)
// is collected. (The classes' finalizer func holds the classes, so a
// reserve would otherwise keep its buffers alive for good.)
func (e *elasticEngine) newRetention() {
	e.ret = retention{clock: clock.Now, self: weak.Make(e)}
	e.ret.start = e.ret.clock()
	shard.AfterEachGC(e.ret.self, (*elasticEngine).afterGC)
	runtime.AddCleanup(e, emptyReserves, e.classes)
}

// emptyReserves drops every buffer the reserves of a collected pool hold.
func emptyReserves(classes []elasticClass) {
	for c := range classes {
		r := &classes[c].res
		r.mu.Lock()
		r.bufs = nil
		r.mu.Unlock()
	}
}

// afterGC tends e after a GC cycle, and starts its timer if the reserves
// then hold idle buffers.
func (e *elasticEngine) afterGC() {
	if e.tend(false) {
		e.arm()
	}
}

// arm starts the tending timer unless it runs already.
func (e *elasticEngine) arm() {
	r := &e.ret
	if r.armed.Load() || !r.armed.CompareAndSwap(false, true) {
		return
	}
	w := r.self
	clock.AfterFunc(RetentionPeriod, func() {
		e := w.Value()
		if e == nil {
			return
		}
		e.ret.armed.Store(false)
		if e.tend(true) {
			e.arm()
		}
	})
}

// tend moves every idle buffer of the classes' sync.Pools into their
// reserves and, for the timer's step (mayEnd) if a retention period has
// passed since the current one began, gives back what each reserve held
// idle through all of it. It reports whether any reserve still holds a
// buffer.
//
// Only the timer's steps end periods, so that periods run from one timer
// step to the next: a buffer the step after demand fell finds in a
// sync.Pool is given back at the timer's next step, two periods at most
// after demand last needed it. (Were a GC cycle's step to end a period, the
// timer's next step could fall just short of a period after it, and such a
// buffer would wait a third.)
func (e *elasticEngine) tend(mayEnd bool) (holding bool) {
	r := &e.ret
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock()
	end := mayEnd && now-r.start >= int64(RetentionPeriod)
	if end {
		r.start = now
	}
	for c := range e.classes {
		ec := &e.classes[c]
		if ec.res.tend(ec, end) > 0 {
			holding = true
		}
	}
	return holding
}

// tend is the pool's tending step for one class: it drains e's sync.Pool
// into the reserve and, at the end of a period, gives back the low-water
// mark's worth of its oldest buffers. It returns how many the reserve then
// holds.
func (r *reserve) tend(e *elasticClass, end bool) int {
	var batch [64]unsafe.Pointer
	// A locked class's Puts never reach its sync.Pool (but for the checked
	// build's quarantine, which puts there): its drain would only find it
	// empty, and allocate the per-P array sync.Pool's Get remakes after a
	// GC cycle.
	drain := !r.always || checked.Enabled
	for taken := 0; drain && taken < drainMax && r.mayDrain(e); {
		n := e.takeFree(batch[:])
		if n == 0 {
			break
		}
		r.mu.Lock()
		r.bufs = append(r.bufs, batch[:n]...)
		r.mu.Unlock()
		taken += n
		if n < len(batch) {
			break
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteLosses(e, end)
	if end {
		r.giveBack(r.low)
		r.low = len(r.bufs)
	}
	if r.losing && !r.filing {
		r.stock(e)
	}
	return len(r.bufs)
}

// noteLosses notes whether the class lost buffers to the GC since the last
// step: a new loss puts it into loss mode's first stage, where every Put
// files into the reserve, and starts the count of Gets that may make it
// hot; the end of a period without a loss ends loss mode. The caller
// holds r.mu.
func (r *reserve) noteLosses(e *elasticClass, end bool) {
	r.pops = 0
	if unexplained := int64(e.releases.Load()) - int64(r.gone); unexplained > r.lostMax && !r.always {
		r.lostMax = unexplained
		r.lostNow = true
		r.losing = true
		r.hotAt = hotGets()
		r.fileAll(e, true)
	}
	if end {
		if !r.lostNow {
			r.losing = false
			r.fileAll(e, false)
		}
		r.lostNow = false
	}
}

// fileAll makes every Put of the class file into the reserve, or stops
// it. The caller holds r.mu.
func (r *reserve) fileAll(e *elasticClass, on bool) {
	switch {
	case on && !r.filing:
		e.short.Add(lossBias)
	case !on && r.filing:
		e.short.Add(-lossBias)
	}
	r.filing = on
}

// took counts k Gets that took from the reserve: in loss mode's first
// stage, the one that makes the class hot moves it to the second (see
// noteLosses). The caller holds r.mu.
func (r *reserve) took(e *elasticClass, k int) {
	if !r.filing {
		return
	}
	if r.pops += k; r.pops >= r.hotAt {
		r.fileAll(e, false)
		r.stock(e)
	}
}

// stock raises the shortfall of a hot class in loss mode to what its
// reserve lacks of GOMAXPROCS buffers, about what sync.Pool drops in a GC
// cycle, so that the next Puts file that many into the reserve; the Puts
// after them go to the sync.Pool. Only the tending step (and the Get that
// makes the class hot) raises it: were every Get that takes from the
// reserve to raise it, a class with fewer idle buffers than the stock
// would file every Put into the reserve and take every Get from it, under
// its mutex. The shortfall of Gets that made buffers counts towards the
// stock. The caller holds r.mu.
func (r *reserve) stock(e *elasticClass) {
	want := int64(runtime.GOMAXPROCS(0) - len(r.bufs))
	for {
		n := e.short.Load()
		if n >= want || e.short.CompareAndSwap(n, want) {
			return
		}
	}
}

// mayDrain reports whether the class's sync.Pool may hold a buffer: whether
// the class made buffers that neither its reserve holds nor the GC has
// collected. Tending skips the others, because a sync.Pool Get after a GC
// cycle allocates the pool's per-P array, even for a pool with nothing in
// it: a class idle for good would cost an allocation every cycle.
func (r *reserve) mayDrain(e *elasticClass) bool {
	r.mu.Lock()
	held := uint64(len(r.bufs))
	r.mu.Unlock()
	return sat(e.grows.Load(), e.releases.Load()) > held
}

// takeFree fills dst with idle buffers from the class's sync.Pool, as
// many as it holds, and returns how many.
func (e *elasticClass) takeFree(dst []unsafe.Pointer) int {
	for n := range dst {
		ptr, _ := e.free.Get().(unsafe.Pointer)
		if ptr == nil {
			return n
		}
		dst[n] = ptr
	}
	return len(dst)
}

// giveBack drops the k oldest buffers of the reserve, for the GC to collect
// (their finalizers count them in Releases), and lets a reserve that shrank
// to a quarter of its storage have smaller storage.
func (r *reserve) giveBack(k int) {
	if k == 0 {
		return
	}
	n := copy(r.bufs, r.bufs[k:])
	clear(r.bufs[n:])
	r.bufs = r.bufs[:n]
	r.gone += uint64(k)
	if n < cap(r.bufs)/4 {
		r.bufs = append([]unsafe.Pointer(nil), r.bufs...)
	}
}

// pop takes the newest buffer of class e's reserve, or returns nil.
func (e *elasticClass) pop() unsafe.Pointer {
	var one [1]unsafe.Pointer
	e.popInto(one[:])
	return one[0]
}

// popInto fills dst with the newest buffers of class e's reserve and
// returns how many.
func (e *elasticClass) popInto(dst []unsafe.Pointer) int {
	r := &e.res
	r.mu.Lock()
	k := min(len(dst), len(r.bufs))
	n := len(r.bufs) - k
	copy(dst, r.bufs[n:])
	clear(r.bufs[n:])
	r.bufs = r.bufs[:n]
	r.low = min(r.low, n)
	r.took(e, k)
	r.mu.Unlock()
	return k
}

// parkShort files the idle buffer at ptr, marked, into the reserve for a
// Put that found the class short, and takes one off a counted shortfall;
// or into the sync.Pool, if other Puts made the shortfall up first.
func (e *elasticClass) parkShort(ptr unsafe.Pointer) {
	var n int64
	for {
		n = e.short.Load()
		if n <= 0 {
			e.free.Put(ptr)
			return
		}
		if n >= lossBias || e.short.CompareAndSwap(n, n-1) {
			break
		}
	}
	r := &e.res
	if n >= lossBias && !r.always {
		// Every Put files into the reserve (loss mode's first stage): a
		// Put never waits for the reserve's mutex, or every Put of a busy
		// class would queue on it; the sync.Pool takes the buffer
		// instead, and the tending step moves it.
		if !r.mu.TryLock() {
			e.free.Put(ptr)
			return
		}
	} else {
		r.mu.Lock()
	}
	r.bufs = append(r.bufs, ptr)
	r.mu.Unlock()
}

// takeIdle returns an idle buffer of class c from the reserve, or makes
// one (nil if the budget forbids it) and counts it in the shortfall; for a
// Get that found the class's sync.Pool empty.
func (e *elasticEngine) takeIdle(c int) unsafe.Pointer {
	ec := &e.classes[c]
	if ptr := ec.pop(); ptr != nil {
		return ptr
	}
	ptr := e.grow(c)
	if ptr != nil {
		ec.short.Add(1)
	}
	return ptr
}

// park puts the idle buffer at ptr, marked, where the next Get of the
// class finds it: the sync.Pool, or the reserve while the class is short.
// Put inlines the same three lines.
func (e *elasticClass) park(ptr unsafe.Pointer) {
	if e.short.Load() > 0 {
		e.parkShort(ptr)
		return
	}
	e.free.Put(ptr)
}
