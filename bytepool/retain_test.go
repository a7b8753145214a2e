package bytepool_test

import (
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/clock"
	"github.com/memkit/memkit/internal/race"
)

// fakeClock is a clock the test moves: nanoseconds.
type fakeClock struct{ t atomic.Int64 }

func (c *fakeClock) now() int64      { return c.t.Load() }
func (c *fakeClock) advance(d int64) { c.t.Add(d) }
func (c *fakeClock) periods(k int64) { c.advance(k * int64(bytepool.RetentionPeriod)) }
func withClock(p *bytepool.Pool) *fakeClock {
	c := new(fakeClock)
	p.SetClock(c.now)
	return c
}

// giveBackIdle lets a pool with a clock of the test's pass two retention
// periods with no demand, tending at each, which gives back every idle
// buffer.
func giveBackIdle(p *bytepool.Pool, c *fakeClock) {
	p.Tend()
	c.periods(1)
	p.Tend()
	c.periods(1)
	p.Tend()
}

// exactPools skips a test that counts what sync.Pool holds: the race
// detector makes sync.Pool drop a random quarter of its Puts, and the
// checked build holds Puts in its quarantine. It runs the test on one P,
// so that no idle buffer waits in another P's private slot, which a Get
// cannot steal, and with the GC off, so that sync.Pool drops nothing.
func exactPools(t *testing.T) {
	t.Helper()
	if race.Enabled || checked.Enabled {
		t.Skip("sync.Pool's contents are not exact under the race detector or in the checked build")
	}
	procs := runtime.GOMAXPROCS(1)
	gc := debug.SetGCPercent(-1)
	t.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(gc)
	})
}

// retainModel is what an Elastic class holds idle, by the rule the
// docs/bytepool.md ("Retention") states: idle buffers in the sync.Pool (s), in the
// reserve (r), the reserve's low-water mark in the current period, its
// shortfall, and how many the reserve gave back.
type retainModel struct {
	s, r, low, short, gone int
	start                  int64
}

func (m *retainModel) get() (grew bool) {
	switch {
	case m.s > 0:
		m.s--
	case m.r > 0:
		m.r--
		m.low = min(m.low, m.r)
	default:
		m.short++
		return true
	}
	return false
}

func (m *retainModel) put() {
	if m.short > 0 {
		m.short--
		m.r++
		return
	}
	m.s++
}

func (m *retainModel) tend(now int64) {
	m.r += m.s
	m.s = 0
	if now-m.start >= int64(bytepool.RetentionPeriod) {
		m.start = now
		m.r -= m.low
		m.gone += m.low
		m.low = m.r
	}
}

// TestElastic_RetentionFollowsAModel drives one class with random demand
// and a clock the test moves, tending at random moments, and checks after
// every step what the reserve holds, what it gave back and how many
// buffers the pool made against the model of the documented rule.
func TestElastic_RetentionFollowsAModel(t *testing.T) {
	exactPools(t)
	const size = 4 << 10
	p := mustNew(t)
	c := withClock(p)
	class := 0
	for i, s := range p.Classes() {
		if s == size {
			class = i
		}
	}
	var m retainModel
	rng := rand.New(rand.NewPCG(5, 6))
	var held [][]byte
	grows := 0
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 4: // a burst of Gets
			for range rng.IntN(8) + 1 {
				if m.get() {
					grows++
				}
				held = append(held, p.Get(size))
			}
		case op < 8: // Puts of what is held
			for k := rng.IntN(len(held) + 1); k > 0; k-- {
				i := rng.IntN(len(held))
				p.Put(held[i])
				held[i] = held[len(held)-1]
				held = held[:len(held)-1]
				m.put()
			}
		default: // time passes, and the pool is tended
			c.advance(rng.Int64N(int64(bytepool.RetentionPeriod) * 3 / 2))
			m.tend(c.now())
			p.Tend()
			if r, gone := p.Reserve(class); r != m.r || gone != uint64(m.gone) {
				t.Fatalf("step %d: reserve holds %d, gave back %d; the model %d and %d", step, r, gone, m.r, m.gone)
			}
		}
		if s := readStats(p); s.Grows != uint64(grows) {
			t.Fatalf("step %d: the pool made %d buffers; the model %d", step, s.Grows, grows)
		}
	}
	// Demand stops: within two periods every idle buffer is given back.
	for _, b := range held {
		p.Put(b)
		m.put()
	}
	held = nil
	for range 3 {
		m.tend(c.now())
		p.Tend()
		c.periods(1)
	}
	if r, gone := p.Reserve(class); r != 0 || m.r != 0 || gone != uint64(m.gone) || m.gone != grows {
		t.Fatalf("after two idle periods the reserve holds %d (model %d), gave back %d (model %d) of %d made", r, m.r, gone, m.gone, grows)
	}
}

// TestElastic_RetentionKeepsThePeakWhileRecent: buffers a burst needed stay
// through the next period, so a burst that recurs within it allocates
// nothing, however many GC cycles pass in between; they are given back once
// two periods pass without it.
func TestElastic_RetentionKeepsThePeakWhileRecent(t *testing.T) {
	exactPools(t)
	const size, count = 64 << 10, 64
	p := mustNew(t)
	c := withClock(p)
	bufs := make([][]byte, count)
	burst := func() {
		for i := range bufs {
			bufs[i] = p.Get(size)
		}
		for _, b := range bufs {
			p.Put(b)
		}
	}
	burst()
	for range 5 {
		runtime.GC()
	}
	p.Tend() // what the GC hook does after each cycle
	c.advance(int64(bytepool.RetentionPeriod) * 3 / 2)
	p.Tend() // a period passed: nothing was idle through it
	for range 5 {
		runtime.GC()
	}
	before := readStats(p)
	burst()
	if s := readStats(p); s.Grows != before.Grows || s.Grows != count {
		t.Fatalf("the burst recurring within a period made %d buffers more", s.Grows-before.Grows)
	}
	c.periods(1)
	p.Tend()
	if held, _ := p.Reserve(classOf(p, size)); held != count {
		t.Fatalf("one period after the last burst the reserve holds %d of %d", held, count)
	}
	c.periods(1)
	p.Tend()
	if held, gone := p.Reserve(classOf(p, size)); held != 0 || gone != count {
		t.Fatalf("two periods after the last burst the reserve holds %d, gave back %d of %d", held, gone, count)
	}
}

// classOf returns the index of the class of size bytes.
func classOf(p *bytepool.Pool, size int) int {
	for i, s := range p.Classes() {
		if s >= size {
			return i
		}
	}
	return -1
}

// TestElastic_NewBufferCostsOneAllocation: making a buffer costs make's one
// allocation, not three (a finalizer set from the class's one func instead of
// a cleanup per buffer).
func TestElastic_NewBufferCostsOneAllocation(t *testing.T) {
	if race.Enabled || checked.Enabled {
		t.Skip("the checked build records every Get")
	}
	p := mustNew(t)
	held := make([][]byte, 0, 1000)
	allocs := testing.AllocsPerRun(500, func() { held = append(held, p.Get(4<<10)) })
	if allocs != 1 {
		t.Fatalf("a Get that makes a buffer costs %v allocations; want 1", allocs)
	}
	if s := readStats(p); s.Grows != uint64(len(held)) {
		t.Fatalf("Grows = %d; want the %d buffers made", s.Grows, len(held))
	}
}

// TestElastic_LosingClassFilesPutsIntoTheReserveUntilHot: once the GC
// collected a buffer of a class that its reserve did not give back (here
// one never put back; sync.Pool's drops count the same), every Put of the
// class files into the reserve, until HotGets Gets between two tending
// steps have taken from it; from then on each step has the next Puts file
// into the reserve what it lacks of a stock of GOMAXPROCS buffers, and the
// Puts after them go to the sync.Pool, so that a warm Get+Put touches the
// reserve no more than in a class that lost nothing. A new loss starts
// over; a whole period without one ends the mode.
func TestElastic_LosingClassFilesPutsIntoTheReserveUntilHot(t *testing.T) {
	exactPools(t)
	const size = 8 << 10
	p := mustNew(t)
	c := withClock(p)
	class := classOf(p, size)
	held := func() int { n, _ := p.Reserve(class); return n }
	pairs := func(k int) {
		for range k {
			p.Put(p.Get(size))
		}
	}
	// Three buffers made: their Puts make up the shortfall, into the reserve.
	out := [][]byte{p.Get(size), p.Get(size), p.Get(size)}
	for _, b := range out {
		p.Put(b)
	}
	// Two out again; one comes back (to the sync.Pool), one is lost.
	b1 := p.Get(size)
	func() { _ = p.Get(size)[0] }()
	p.Put(b1)
	if held() != 1 {
		t.Fatalf("before any loss a Put left %d in the reserve; want 1", held())
	}
	waitStats(t, p, func(s *memkit.Stats) bool { return s.Releases == 1 })
	p.Tend() // sees the loss, and drains the sync.Pool's buffer into the reserve
	// Every Put files into the reserve, for HotGets-1 Gets before a step
	// and HotGets-1 after it.
	for range 2 {
		pairs(bytepool.HotGets() - 1)
		if held() != 2 {
			t.Fatalf("after a loss Get+Put pairs left the reserve holding %d; want 2", held())
		}
		p.Tend()
	}
	// The HotGets-th Get between two steps makes the class hot: its Put,
	// and every one after it, goes to the sync.Pool.
	pairs(bytepool.HotGets())
	if held() != 1 {
		t.Fatalf("after HotGets pairs the reserve holds %d; want 1", held())
	}
	if a := testing.AllocsPerRun(100, func() { p.Put(p.Get(size)) }); a != 0 {
		t.Fatalf("a warm Get+Put of a hot losing class made %v allocations; want 0", a)
	}
	if held() != 1 {
		t.Fatalf("warm Get+Put pairs of a hot losing class changed the reserve to %d; want 1", held())
	}
	// All out (one from the sync.Pool, one from the reserve, one made)
	// while a step runs with GOMAXPROCS 3: the next three Puts fill the
	// stock, and the Puts after them go to the sync.Pool.
	out = [][]byte{p.Get(size), p.Get(size), p.Get(size)}
	runtime.GOMAXPROCS(3)
	p.Tend()
	runtime.GOMAXPROCS(1)
	for _, b := range out {
		p.Put(b)
	}
	if held() != 3 {
		t.Fatalf("the Puts after a step of a hot losing class left %d in the reserve; want the stock, 3", held())
	}
	pairs(4) // one Get takes from the reserve, all Puts go to the sync.Pool
	if held() != 2 {
		t.Fatalf("Get+Put pairs after the stock was filed left %d in the reserve; want 2", held())
	}
	// A new loss: every Put files into the reserve again.
	func() { _ = p.Get(size)[0] }()
	waitStats(t, p, func(s *memkit.Stats) bool { return s.Releases == 2 })
	p.Tend()
	pairs(3)
	if held() != 2 {
		t.Fatalf("after a second loss Get+Put pairs left the reserve holding %d; want 2", held())
	}
	c.periods(1)
	p.Tend() // the period of the loss ends: its buffers were used in it
	c.periods(1)
	p.Tend() // a whole period without a loss, nor a Get: the buffers go back
	if n, gone := p.Reserve(class); n != 0 || gone != 2 {
		t.Fatalf("two periods after the loss the reserve holds %d and gave back %d; want 0 and 2", n, gone)
	}
	// Out of loss mode, a step keeps no stock: a buffer out during it goes
	// back to the sync.Pool.
	p.Put(p.Get(size)) // made: the Put makes up the shortfall
	b1 = p.Get(size)   // from the reserve
	p.Tend()
	p.Put(b1)
	if held() != 0 {
		t.Fatalf("a period without a loss, a Put after a step left %d in the reserve; want 0", held())
	}
}

// TestElastic_LargeClassesKeepIdleBuffersInTheReserve: from 256 KiB up,
// every Put files into the reserve, which the tending step reaches whole,
// never into a sync.Pool.
func TestElastic_LargeClassesKeepIdleBuffersInTheReserve(t *testing.T) {
	exactPools(t)
	p := mustNew(t)
	for _, size := range []int{256 << 10, 1 << 20} {
		class := classOf(p, size)
		for i := range 3 {
			p.Put(p.Get(size))
			if held, _ := p.Reserve(class); held != 1 {
				t.Fatalf("size %d, Get+Put %d: the reserve holds %d; want 1", size, i, held)
			}
		}
	}
	if held, _ := p.Reserve(classOf(p, 128<<10)); held != 0 {
		t.Fatalf("a class under 256 KiB holds %d in its reserve before any Put", held)
	}
}

// TestElastic_LockedFromMovesTheThreshold: WithLockedFrom(32 KiB) makes
// the classes from 32 KiB up keep every idle buffer in the reserve, through
// Get and Put's fast path (sizes up to 64 KiB) as through a Cache, and
// leaves the classes under it on their sync.Pools; a threshold above the
// largest class leaves every class there.
func TestElastic_LockedFromMovesTheThreshold(t *testing.T) {
	exactPools(t)
	p := mustNew(t, bytepool.WithLockedFrom(32<<10))
	for _, size := range []int{28<<10 + 1, 32 << 10, 64 << 10, 1 << 20} { // 28 KiB+1 rounds up to the 32 KiB class
		class := classOf(p, size)
		for i := range 3 {
			p.Put(p.Get(size))
			if held, _ := p.Reserve(class); held != 1 {
				t.Fatalf("size %d, Get+Put %d: the reserve holds %d; want 1", size, i, held)
			}
		}
		c := p.NewCache()
		c.Put(c.Get(size))
		c.Release()
		if held, _ := p.Reserve(class); held != 1 {
			t.Fatalf("size %d, through a Cache: the reserve holds %d; want 1", size, held)
		}
	}
	if held, _ := p.Reserve(classOf(p, 28<<10)); held != 0 {
		t.Fatalf("the 28 KiB class, under the threshold, holds %d in its reserve before any Put", held)
	}
	none := mustNew(t, bytepool.WithLockedFrom(2<<20))
	none.Put(none.Get(1 << 20)) // a new buffer: this Put makes up the shortfall its Get counted
	none.Put(none.Get(1 << 20)) // from the reserve, back to the sync.Pool
	if held, _ := none.Reserve(classOf(none, 1<<20)); held != 0 {
		t.Fatalf("WithLockedFrom(2 MiB): the 1 MiB class holds %d in its reserve; want 0 (its sync.Pool holds it)", held)
	}
}

// TestElastic_LockedClassAllocatesNothingPerGC: a Get+Put of a locked
// class allocates nothing across GC cycles, where a sync.Pool class
// allocates its per-P storage again after each (the cost WithLockedFrom
// removes).
func TestElastic_LockedClassAllocatesNothingPerGC(t *testing.T) {
	if race.Enabled || checked.Enabled {
		t.Skip("the race detector and the checked build allocate on their own")
	}
	const size = 64 << 10
	for _, tc := range []struct {
		from   int
		locked bool
	}{{32 << 10, true}, {bytepool.DefaultLockedFrom, false}} {
		p := mustNew(t, bytepool.WithLockedFrom(tc.from))
		p.Put(p.Get(size))
		a := testing.AllocsPerRun(20, func() {
			runtime.GC()
			p.Put(p.Get(size))
		})
		if tc.locked && a != 0 {
			t.Errorf("WithLockedFrom(%d): GC then Get+Put(%d): %v allocs/op; want 0", tc.from, size, a)
		}
		if !tc.locked && a < 1 {
			t.Errorf("WithLockedFrom(%d): GC then Get+Put(%d): %v allocs/op; want >= 1 (sync.Pool's per-P array), or the test shows nothing", tc.from, size, a)
		}
	}
}

// holdAtOnce gets k buffers of size from p, all in use at once, and puts
// them back.
func holdAtOnce(p *bytepool.Pool, size, k int) {
	bufs := make([][]byte, k)
	for i := range bufs {
		bufs[i] = p.Get(size)
	}
	for _, b := range bufs {
		p.Put(b)
	}
}

// TestElastic_LockedClassFollowsDemand: a locked class of 64 KiB keeps a
// burst's buffers through the period after it and gives them back at the
// end of the next, as the sync.Pool classes do (the model is the retention
// rule; the clock is the test's).
func TestElastic_LockedClassFollowsDemand(t *testing.T) {
	exactPools(t)
	var fake clock.Fake
	t.Cleanup(clock.Set(&fake))
	const size, count = 64 << 10, 16
	p := mustNew(t, bytepool.WithLockedFrom(32<<10))
	class := classOf(p, size)
	holdAtOnce(p, size, count)
	holdAtOnce(p, size, count/2)           // half the burst again, within the first period
	fake.Advance(bytepool.RetentionPeriod) // the period of the burst: all were needed
	if held, gone := p.Reserve(class); held != count || gone != 0 {
		t.Fatalf("one period after the burst the reserve holds %d and gave back %d; want %d and 0", held, gone, count)
	}
	holdAtOnce(p, size, count/4)           // a quarter needed in the next period
	fake.Advance(bytepool.RetentionPeriod) // 3/4 idle all period long go back
	if held, gone := p.Reserve(class); held != count/4 || gone != count-count/4 {
		t.Fatalf("after a period needing a quarter the reserve holds %d and gave back %d; want %d and %d", held, gone, count/4, count-count/4)
	}
	fake.Advance(bytepool.RetentionPeriod) // none needed
	if held, gone := p.Reserve(class); held != 0 || gone != count {
		t.Fatalf("after an idle period the reserve holds %d and gave back %d; want 0 and %d", held, gone, count)
	}
	if s := readStats(p); s.Grows != count {
		t.Fatalf("Grows = %d; want %d (no Get made a buffer the reserve held)", s.Grows, count)
	}
}

// TestElastic_TimerGivesBackIdleBuffersWithinTwoPeriods: with no GC cycle
// and no call, the pool's own timer gives back every idle buffer within two
// periods of its last use (the clock is a Fake, whose Advance runs the
// timer).
func TestElastic_TimerGivesBackIdleBuffersWithinTwoPeriods(t *testing.T) {
	exactPools(t)
	var fake clock.Fake
	t.Cleanup(clock.Set(&fake))
	const size, count = 64 << 10, 16
	p := mustNew(t)
	class := classOf(p, size)
	holdAtOnce(p, size, count)
	fake.Advance(bytepool.RetentionPeriod) // a period in which all were used
	if held, gone := p.Reserve(class); held != count || gone != 0 {
		t.Fatalf("one period after the burst the reserve holds %d and gave back %d; want %d and 0", held, gone, count)
	}
	fake.Advance(bytepool.RetentionPeriod) // a period in which none was
	if held, gone := p.Reserve(class); held != 0 || gone != count {
		t.Fatalf("two periods after the burst the reserve holds %d and gave back %d; want 0 and %d", held, gone, count)
	}
	if s := readStats(p); s.Grows != count {
		t.Fatalf("Grows = %d; want %d", s.Grows, count)
	}
}
