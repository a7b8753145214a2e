package bytepool_test

import (
	"sync"
	"testing"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
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
		{[]bytepool.Option{bytepool.WithBudget(0)}, "bytepool: Budget 0 must be positive"},
		{[]bytepool.Option{bytepool.WithBudgetAlert(0, func(int64, bool) {})}, "bytepool: BudgetAlert threshold 0 must be positive"},
	} {
		if _, err := bytepool.New(tc.opts...); err == nil || err.Error() != tc.want {
			t.Errorf("New: %v; want %q", err, tc.want)
		}
	}
}

func TestElastic_BudgetFallsBackAndCounts(t *testing.T) {
	const size = 64 << 10
	p := mustNew(t, bytepool.WithMaxSize(size), bytepool.WithBudget(4*size), bytepool.WithShards(1))
	var bufs [][]byte
	for range 4 {
		bufs = append(bufs, p.Get(size))
	}
	if s := readStats(p); s.HeapFallbacks != 0 || s.Grows != 4 {
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
	if s := readStats(p); s.HeapFallbacks != 1 || s.LiveObjects != 5 {
		t.Fatalf("after the fallback: %v", &s)
	}
	// An idle buffer serves the next Get within the budget.
	p.Put(bufs[0])
	if b, ok := p.TryGet(size); !ok || addr(b) != addr(bufs[0]) {
		t.Fatal("TryGet of an idle buffer failed at the budget")
	} else {
		bufs[0] = b
	}
	// What comes back past the budget is dropped: the pool keeps at most
	// its budget once the idle buffers reach the depot.
	p.Put(fb)
	for _, b := range bufs {
		p.Put(b)
	}
	p.Decay()
	if s := readStats(p); s.ReservedBytes > 4*size || s.Releases < 1 {
		t.Fatalf("after the Puts and a decay pass: %v", &s)
	}
	p.Decay()
	p.Decay()
	if s := readStats(p); s.ReservedBytes != 0 {
		t.Fatalf("idle buffers kept after three decay passes: %v", &s)
	}
	// The budget is free again.
	if _, ok := p.TryGet(size); !ok {
		t.Fatal("TryGet failed after the pool gave its buffers back")
	}
}

func TestElastic_BudgetAlertFiresOnceEachWay(t *testing.T) {
	const size = 64 << 10
	var a alerts
	p := mustNew(t, bytepool.WithMaxSize(size), bytepool.WithShards(1),
		bytepool.WithBudgetAlert(3*size, a.fn)) // no limit, only the alert
	var bufs [][]byte
	for range 6 {
		bufs = append(bufs, p.Get(size))
	}
	if up, down := a.counts(); up != 1 || down != 0 || a.lastUsed != 3*size {
		t.Fatalf("after 6 buffers: up %d down %d used %d", up, down, a.lastUsed)
	}
	c := p.NewCache()
	c.Put(c.Get(size)) // a seventh buffer, made by the Cache
	for _, b := range bufs {
		p.Put(b)
	}
	c.Release()
	for range 3 {
		p.Decay()
	}
	if up, down := a.counts(); up != 1 || down != 1 || a.lastAbove {
		t.Fatalf("after the decay: up %d down %d", up, down)
	}
}

func TestBounded_BudgetAlertTracksRegionAndFallbacks(t *testing.T) {
	const size = 64 << 10
	var a alerts
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithMaxSize(size),
		bytepool.WithBudget(2*size), bytepool.WithShards(1), bytepool.WithBudgetAlert(3*size, a.fn))
	x, y := p.Get(size), p.Get(size) // the whole region
	if up, _ := a.counts(); up != 0 {
		t.Fatal("alert below the threshold")
	}
	fb := p.Get(size) // a heap fallback: over the threshold
	if up, down := a.counts(); up != 1 || down != 0 || a.lastUsed != 3*size {
		t.Fatalf("after the fallback: up %d down %d used %d", up, down, a.lastUsed)
	}
	p.Put(fb)
	if up, down := a.counts(); up != 1 || down != 1 || a.lastUsed != 2*size {
		t.Fatalf("after the fallback's Put: up %d down %d used %d", up, down, a.lastUsed)
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
