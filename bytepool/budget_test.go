package bytepool_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/memkit/memkit"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

// alerts records the calls of a budget alert.
type alerts struct {
	mu        sync.Mutex
	up, down  int
	lastUsed  int64
	lastAbove bool
}

func (a *alerts) fn(used int64, above bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if above {
		a.up++
	} else {
		a.down++
	}
	a.lastUsed, a.lastAbove = used, above
}

func (a *alerts) counts() (up, down int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.up, a.down
}

func TestNew_BudgetOptionsNameTheOption(t *testing.T) {
	for _, tc := range []struct {
		opts []bytepool.Option
		want string
	}{
		{[]bytepool.Option{bytepool.WithBudget(0)}, "memkit/bytepool: WithBudget(0): a budget is a number of bytes > 0; leave the option out for no limit"},
		{[]bytepool.Option{bytepool.WithBudget(0), bytepool.WithPolicy(bytepool.Bounded)}, "memkit/bytepool: WithBudget(0): a budget is a number of bytes > 0; leave the option out for no limit"},
		{[]bytepool.Option{bytepool.WithBudget(-1)}, "memkit/bytepool: WithBudget(-1): a budget is a number of bytes > 0; leave the option out for no limit"},
		{[]bytepool.Option{bytepool.WithBudgetAlert(0, func(int64, bool) {})}, "memkit/bytepool: WithBudgetAlert(0, fn): the threshold must be > 0 bytes"},
		{[]bytepool.Option{bytepool.WithBudget(1 << 20), bytepool.WithBudgetAlert(2<<20, func(int64, bool) {})}, "memkit/bytepool: WithBudgetAlert(2097152, fn): the threshold is above WithBudget(1048576), so the alert could never fire"},
	} {
		if _, err := bytepool.New(tc.opts...); err == nil || err.Error() != tc.want {
			t.Errorf("New: %v; want %q", err, tc.want)
		}
	}
}

func TestElastic_BudgetFallsBackAndCounts(t *testing.T) {
	const size = 64 << 10
	p := mustNew(t, bytepool.WithMaxSize(size), bytepool.WithBudget(4*size), bytepool.WithExactStats())
	var bufs [][]byte
	for range 4 {
		bufs = append(bufs, p.Get(size))
	}
	if s := readStats(p); s.HeapFallbacks != 0 || s.Grows != 4 || s.ReservedBytes != 4*size {
		t.Fatalf("within the budget: %v", &s)
	}
	before := readStats(p)
	if _, ok := p.TryGet(size); ok {
		t.Fatal("TryGet succeeded past the budget")
	}
	after := readStats(p)
	if after.Failures != before.Failures+1 || after.Allocs != before.Allocs ||
		after.LiveObjects != before.LiveObjects || after.ReservedBytes != before.ReservedBytes {
		t.Fatalf("failed TryGet changed state: before %v after %v", &before, &after)
	}
	fb := p.Get(size) // past the budget: from the heap, counted
	if len(fb) != size || cap(fb) != size {
		t.Fatalf("fallback len %d cap %d", len(fb), cap(fb))
	}
	if s := readStats(p); s.HeapFallbacks != 1 || s.LiveObjects != 5 || s.Grows != 4 {
		t.Fatalf("after the fallback: %v", &s)
	}
	// An idle buffer serves the next Get within the budget (under the race
	// detector sync.Pool may drop it, and the budget stays charged until
	// the GC collects it).
	p.Put(bufs[0])
	if b, ok := p.TryGet(size); ok {
		bufs[0] = b
	} else if !race.Enabled && !checked.Enabled {
		t.Fatal("TryGet of an idle buffer failed at the budget")
	} else {
		bufs = bufs[1:]
	}
	if checked.Enabled {
		return // the quarantine keeps what comes back reachable
	}
	p.Put(fb)
	for _, b := range bufs {
		p.Put(b)
	}
	clear(bufs)
	// The pool gives idle buffers back after two idle retention periods, and
	// each collected buffer gives its bytes back to the budget.
	giveBackIdle(p, withClock(p))
	s := waitStats(t, p, func(s *memkit.Stats) bool { return s.ReservedBytes == 0 })
	if s.Releases != 4 {
		t.Fatalf("after the GC collected the idle buffers: %v", &s)
	}
	if _, ok := p.TryGet(size); !ok {
		t.Fatal("TryGet failed after the pool gave its buffers back")
	}
}

// waitStats runs GC cycles until ok holds for the pool's stats, and
// returns them: the GC runs the finalizers of the buffers it found
// unreachable on their own goroutine after the cycle, so this waits rather
// than assume; a minute without it is a failure.
func waitStats(t *testing.T, p *bytepool.Pool, ok func(*memkit.Stats) bool) memkit.Stats {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s := readStats(p)
		if ok(&s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute of GCs: %v", &s)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

func TestElastic_BudgetAlertFiresOnceEachWay(t *testing.T) {
	const size = 64 << 10
	var a alerts
	p := mustNew(t, bytepool.WithMaxSize(size),
		bytepool.WithBudgetAlert(3*size, a.fn)) // no limit, only the alert
	var bufs [][]byte
	for range 6 {
		bufs = append(bufs, p.Get(size))
	}
	if up, down := a.counts(); up != 1 || down != 0 || a.lastUsed != 3*size {
		t.Fatalf("after 6 buffers: up %d down %d used %d", up, down, a.lastUsed)
	}
	if checked.Enabled {
		return // the quarantine keeps what comes back reachable
	}
	c := p.NewCache()
	c.Put(c.Get(size)) // a seventh buffer, made by the Cache
	for _, b := range bufs {
		p.Put(b)
	}
	clear(bufs)
	c.Release()
	waitStats(t, p, func(*memkit.Stats) bool { _, down := a.counts(); return down > 0 })
	if up, down := a.counts(); up != 1 || down != 1 || a.lastAbove {
		t.Fatalf("after the GC collected the buffers: up %d down %d", up, down)
	}
}

func TestBounded_BudgetAlertTracksRegionAndFallbacks(t *testing.T) {
	const size = 64 << 10
	var a alerts
	// The region holds two buffers; the alert is at the whole region
	// (WithBudgetAlert may not ask for more than WithBudget).
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithMaxSize(size),
		bytepool.WithBudget(2*size), bytepool.WithBudgetAlert(2*size, a.fn))
	if up, _ := a.counts(); up != 0 {
		t.Fatalf("alert before any Get: used %d", a.lastUsed)
	}
	x, y := p.Get(size), p.Get(size) // the class takes the whole region
	if up, down := a.counts(); up != 1 || down != 0 || a.lastUsed != 2*size {
		t.Fatalf("with the region taken: up %d down %d used %d", up, down, a.lastUsed)
	}
	// A region's slabs stay charged once taken; a heap fallback is charged
	// on top while it is live, which crosses nothing while above.
	fb := p.Get(size)
	if !p.HeapFallback(fb) {
		t.Fatal("the third buffer came from the region")
	}
	p.Put(fb)
	if up, down := a.counts(); up != 1 || down != 0 {
		t.Fatalf("after the fallback's Get and Put: up %d down %d", up, down)
	}
	p.Put(x)
	p.Put(y)
}

func TestPool_OversizeChargesItsBudget(t *testing.T) {
	var a alerts
	p := mustNew(t, bytepool.WithBudgetAlert(bytepool.DefaultMaxSize+1, a.fn))
	b := p.Get(bytepool.DefaultMaxSize + 1)
	p.Put(b)
	if up, down := a.counts(); up != 1 || down != 1 {
		t.Fatalf("oversize Get+Put: up %d down %d", up, down)
	}
}

func TestPool_ZeroAllocsWithBudgetAlert(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build records every Get")
	}
	if race.Enabled {
		t.Skip("sync.Pool drops a quarter of the buffers at random under the race detector, so Gets allocate")
	}
	fn := func(int64, bool) {}
	for _, opts := range [][]bytepool.Option{
		{bytepool.WithBudget(1 << 30), bytepool.WithBudgetAlert(1<<20, fn)},
		{bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudgetAlert(1<<20, fn)},
	} {
		p := mustNew(t, opts...)
		c := p.NewCache()
		for _, n := range []int{64, 4096, 1 << 20} {
			p.Put(p.Get(n))
			c.Put(c.Get(n))
			if a := testing.AllocsPerRun(100, func() { p.Put(p.Get(n)) }); a != 0 {
				t.Errorf("%v: Get+Put(%d): %v allocs/op; want 0", p.Policy(), n, a)
			}
			if a := testing.AllocsPerRun(100, func() { c.Put(c.Get(n)) }); a != 0 {
				t.Errorf("%v: Cache Get+Put(%d): %v allocs/op; want 0", p.Policy(), n, a)
			}
		}
	}
}

// TestBounded_BudgetAlertMayCallThePool pins that a Bounded pool's alert
// runs with no lock of the pool held, as WithBudgetAlert promises: an alert
// that reads the stats (which takes every shard's lock in turn) and gets
// and puts a buffer returns, whether the crossing came from a shard's
// refill, a Cache's, a heap fallback or its Put. It hung on a shard lock
// its own goroutine held (issue 21, item 6).
func TestBounded_BudgetAlertMayCallThePool(t *testing.T) {
	const size = 64 << 10
	for _, path := range []string{"Pool", "Cache"} {
		t.Run("via="+path, func(t *testing.T) {
			var p *bytepool.Pool
			var calls []bool
			fn := func(used int64, above bool) {
				calls = append(calls, above)
				var st memkit.Stats
				p.ReadStats(&st)
				p.AppendClassStats(nil)
				if st.InUseBytes > st.ReservedBytes {
					t.Errorf("in the alert: in use %d > reserved %d", st.InUseBytes, st.ReservedBytes)
				}
				p.Put(p.Get(size))
			}
			p = mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithMaxSize(size),
				bytepool.WithBudget(2*size), bytepool.WithBudgetAlert(2*size, fn))
			get, put := p.Get, p.Put
			if path == "Cache" {
				c := p.NewCache()
				get, put = c.Get, c.Put
			}
			memtest.Returns(t, "Get that takes the region's last slab, with an alert that calls the pool", func() {
				x, y := get(size), get(size)
				fb := get(size) // a heap fallback: charged on top
				put(fb)
				put(x)
				put(y)
			})
			if len(calls) != 1 || !calls[0] {
				t.Fatalf("alert calls %v; want one crossing up", calls)
			}
		})
	}
}
