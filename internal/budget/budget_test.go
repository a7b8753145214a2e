package budget

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestBudget_LimitAndCallback(t *testing.T) {
	type call struct {
		used  int64
		above bool
	}
	var calls []call
	b := New(100, 60, func(used int64, above bool) { calls = append(calls, call{used, above}) })
	if !b.TryCharge(50) || len(calls) != 0 {
		t.Fatalf("charge 50: calls %v", calls)
	}
	if b.TryCharge(51) || b.Used() != 50 {
		t.Fatalf("a charge past the limit went through: used %d", b.Used())
	}
	if !b.TryCharge(20) || len(calls) != 1 || calls[0] != (call{70, true}) {
		t.Fatalf("crossing up: %v", calls)
	}
	b.Charge(40) // past the limit: a counted fallback
	if b.Used() != 110 || len(calls) != 1 {
		t.Fatalf("used %d, calls %v", b.Used(), calls)
	}
	b.Release(60)
	if len(calls) != 2 || calls[1] != (call{50, false}) {
		t.Fatalf("crossing down: %v", calls)
	}
}

func TestBudget_NilIsUnlimited(t *testing.T) {
	var b *Budget
	if !b.TryCharge(1<<40) || b.Used() != 0 || b.Limit() != 0 {
		t.Fatal("nil budget")
	}
	b.Charge(1)
	b.Release(1)
	if !New(0, 10, nil).TryCharge(1 << 40) {
		t.Fatal("no limit refused a charge")
	}
}

func TestBudget_ConcurrentCallbacksAlternate(t *testing.T) {
	var mu sync.Mutex
	var seq []bool
	b := New(0, 1000, func(_ int64, above bool) { mu.Lock(); seq = append(seq, above); mu.Unlock() })
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10000 {
				b.Charge(300)
				b.Release(300)
			}
		}()
	}
	wg.Wait()
	if b.Used() != 0 {
		t.Fatalf("used %d", b.Used())
	}
	// Callbacks may interleave, but never two ups or two downs in a row
	// from one transition: every call flipped the state.
	if len(seq) > 0 && seq[len(seq)-1] {
		t.Fatalf("last callback says above with 0 used: %v", seq[len(seq)-5:])
	}
}

func TestOptions_Check(t *testing.T) {
	fn := func(int64, bool) {}
	for _, c := range []struct {
		set  func(o *Options)
		want string
	}{
		{func(o *Options) {}, ""},
		{func(o *Options) { o.SetLimit(1 << 20); o.SetAlert(1<<19, fn) }, ""},
		{func(o *Options) { o.SetLimit(0) }, "WithBudget(0): a budget is a number of bytes > 0; leave the option out for no limit"},
		{func(o *Options) { o.SetLimit(-5) }, "WithBudget(-5): a budget is a number of bytes > 0; leave the option out for no limit"},
		{func(o *Options) { o.SetAlert(0, fn) }, "WithBudgetAlert(0, fn): the threshold must be > 0 bytes"},
		{func(o *Options) { o.SetAlert(10, nil) }, "WithBudgetAlert(10, nil): fn is nil; leave the option out for no alert"},
		{func(o *Options) { o.SetLimit(100); o.SetAlert(101, fn) }, "WithBudgetAlert(101, fn): the threshold is above WithBudget(100), so the alert could never fire"},
	} {
		var o Options
		c.set(&o)
		got := ""
		if err := o.Check(); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("Check() = %q; want %q", got, c.want)
		}
	}
}

func TestOptions_New(t *testing.T) {
	var o Options
	if o.New() != nil {
		t.Fatal("no options made a budget")
	}
	o.SetLimit(64)
	b := o.New()
	if b == nil || b.Limit() != 64 || b.TryCharge(65) {
		t.Fatalf("WithBudget(64) made %+v", b)
	}
}

func TestError_IsAcrossPackages(t *testing.T) {
	a, b := NewErrBudget("slab", "byte budget exhausted"), NewErrBudget("arena", "byte budget exhausted")
	n := NewErrNoSpace("buddy", "no free block large enough")
	if !errors.Is(a, b) || !errors.Is(b, a) || errors.Is(a, n) || errors.Is(n, a) {
		t.Fatal("errors.Is does not match by kind")
	}
	if got := fmt.Errorf("wrapped: %w", n); !errors.Is(got, NewErrNoSpace("slab", "x")) {
		t.Fatal("a wrapped ErrNoSpace is not ErrNoSpace")
	}
	if a.Error() != "memkit/slab: byte budget exhausted" {
		t.Fatalf("text %q", a.Error())
	}
}

func TestEdge_Flip(t *testing.T) {
	var got []int64
	e := NewEdge(10, func(used int64, above bool) {
		if !above {
			used = -used
		}
		got = append(got, used)
	})
	for _, u := range []int64{5, 10, 12, 9, 3, 11} {
		for e.Flip(u) {
		}
	}
	if fmt.Sprint(got) != "[10 -9 11]" {
		t.Fatalf("calls %v; want [10 -9 11]", got)
	}
	var zero Edge
	if zero.Flip(1 << 40) {
		t.Fatal("the zero Edge flipped")
	}
}

func TestBudget_DeferredCallsOnlyInNotify(t *testing.T) {
	var calls []bool
	b := New(0, 100, func(_ int64, above bool) { calls = append(calls, above) })
	b.Defer()
	b.Charge(150)
	if len(calls) != 0 {
		t.Fatalf("a deferred budget called back inside Charge: %v", calls)
	}
	b.Notify()
	b.Notify()
	if len(calls) != 1 || !calls[0] {
		t.Fatalf("after Notify: %v; want one crossing up", calls)
	}
	b.Release(100)
	b.Charge(100)
	b.Notify() // back above: the round trip in between crossed nothing net
	if len(calls) != 1 {
		t.Fatalf("a round trip between Notifies called back: %v", calls)
	}
	b.Release(100)
	b.Notify()
	if len(calls) != 2 || calls[1] {
		t.Fatalf("after the release: %v; want a crossing down", calls)
	}
	var nb *Budget
	nb.Defer()
	nb.Notify()
}
