package extent_test

import (
	"errors"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/memtest"
)

type alertCall struct {
	used  int64
	above bool
}

// WithBudget is the budget; WithBudgetAlert watches the bytes reserved,
// heap fallbacks included, and fires once up and once down.
func TestAllocator_BudgetAlert(t *testing.T) {
	var calls []alertCall
	alert := extent.WithBudgetAlert(8192, func(used int64, above bool) { calls = append(calls, alertCall{used, above}) })
	a := mustNew(t, extent.WithBlockSize(4096), extent.WithBudget(8192), alert)
	n := 4096 - extent.GuardTail // a block each
	x := a.Malloc(n)
	if len(calls) != 0 {
		t.Fatalf("calls %v below the threshold", calls)
	}
	y := a.Malloc(n)
	if len(calls) != 1 || calls[0] != (alertCall{8192, true}) {
		t.Fatalf("calls %v; want one up at 8192", calls)
	}
	// At the budget: TryMalloc fails with nothing changed, Malloc falls
	// back to the heap, counted, and the alert stays up.
	before := readStats(a)
	if _, err := a.TryMalloc(n); !errors.Is(err, extent.ErrBudget) {
		t.Fatalf("TryMalloc at the budget: %v", err)
	}
	if after := readStats(a); after.ReservedBytes != before.ReservedBytes || after.Failures != before.Failures+1 || after.Allocs != before.Allocs {
		t.Fatalf("failed TryMalloc changed the state: %v", &after)
	}
	f := a.Malloc(n)
	if s := readStats(a); s.HeapFallbacks != 1 || len(calls) != 1 {
		t.Fatalf("fallback: %v, calls %v", &s, calls)
	}
	a.Free(f) // the fallback block goes at once
	a.Free(x)
	a.Free(y)
	if len(calls) != 1 {
		t.Fatalf("calls %v before Trim", calls)
	}
	a.Trim()
	a.Trim()
	if len(calls) != 2 || calls[1] != (alertCall{4096, false}) {
		t.Fatalf("calls %v; want one down after Trim", calls)
	}
}

// The budget options follow the rules every package shares, with extent's
// prefix; an alert above the budget could never fire.
func TestNew_BudgetRules(t *testing.T) {
	fn := func(int64, bool) {}
	for _, tc := range []struct {
		opts []extent.Option
		want string
	}{
		{[]extent.Option{extent.WithBudget(0)}, "memkit/extent: WithBudget(0): a budget is a number of bytes > 0; leave the option out for no limit"},
		{[]extent.Option{extent.WithBudgetAlert(0, fn)}, "memkit/extent: WithBudgetAlert(0, fn): the threshold must be > 0 bytes"},
		{[]extent.Option{extent.WithBudgetAlert(64, nil)}, "memkit/extent: WithBudgetAlert(64, nil): fn is nil; leave the option out for no alert"},
		{[]extent.Option{extent.WithBudget(1 << 20), extent.WithBudgetAlert(2<<20, fn)}, "memkit/extent: WithBudgetAlert(2097152, fn): the threshold is above WithBudget(1048576), so the alert could never fire"},
	} {
		a, err := extent.New(tc.opts...)
		if a != nil || err == nil || err.Error() != tc.want {
			t.Errorf("New = %v, %v; want nil, %q", a, err, tc.want)
		}
		if s, err := extent.NewShared(tc.opts...); s != nil || err == nil || err.Error() != tc.want {
			t.Errorf("NewShared = %v, %v; want nil, %q", s, err, tc.want)
		}
	}
}

// TryMalloc past the budget returns ErrBudget itself, which says what
// happened and is a budget error of the shared kind, not the fixed-region
// kind (buddy's ErrNoSpace).
func TestTryMalloc_ErrBudgetIsOfTheBudgetKind(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(4096), extent.WithBudget(4096))
	a.Malloc(4000)
	_, err := a.TryMalloc(4000)
	if err != extent.ErrBudget {
		t.Fatalf("TryMalloc past WithBudget: %v; want ErrBudget", err)
	}
	if err.Error() != "memkit/extent: no free range fits and a new block would pass the WithBudget limit" {
		t.Fatalf("ErrBudget says %q", err)
	}
	if !errors.Is(err, budget.NewErrBudget("x", "")) || errors.Is(err, budget.NewErrNoSpace("x", "")) {
		t.Fatalf("ErrBudget is not of the budget kind only")
	}
}

func TestShared_BudgetAlertOnClose(t *testing.T) {
	var calls []alertCall
	s, err := extent.NewShared(extent.WithBlockSize(4096), extent.WithBudgetAlert(1, func(used int64, above bool) {
		calls = append(calls, alertCall{used, above})
	}))
	if err != nil {
		t.Fatal(err)
	}
	s.Malloc(10)
	s.Close()
	if len(calls) != 2 || calls[0] != (alertCall{4096, true}) || calls[1] != (alertCall{0, false}) {
		t.Fatalf("calls %v", calls)
	}
}

// The alert costs the hot path nothing: no allocation, no call.
func TestAllocator_BudgetAlertZeroAllocs(t *testing.T) {
	memtest.ReleaseOnly(t)
	calls := 0
	a := mustNew(t, extent.WithBudgetAlert(1, func(int64, bool) { calls++ }))
	a.Free(a.Malloc(64))
	if got := testing.AllocsPerRun(100, func() { a.Free(a.Malloc(64)) }); got != 0 {
		t.Fatalf("Malloc+Free with an alert: %v allocs", got)
	}
	if calls != 1 {
		t.Fatalf("%d calls; want the one of the first block", calls)
	}
}

// TestShared_BudgetAlertMayCallTheShared pins that a Shared's alert runs
// after the shard's lock is released: an alert that reads the stats (which
// takes the lock) and mallocs and frees returns, for crossings up (a new
// block, a heap fallback past the budget) and down (Free of the fallback,
// Trim, Close). It hung on the lock its own goroutine held (issue 21,
// item 6).
func TestShared_BudgetAlertMayCallTheShared(t *testing.T) {
	var s *extent.Shared
	var calls []bool
	fn := func(used int64, above bool) {
		calls = append(calls, above)
		var st memkit.Stats
		s.ReadStats(&st)
		if st.InUseBytes > st.ReservedBytes {
			t.Errorf("in the alert: in use %d > reserved %d", st.InUseBytes, st.ReservedBytes)
		}
		s.Free(s.Malloc(16))
	}
	var err error
	s, err = extent.NewShared(extent.WithBlockSize(4096), extent.WithBudget(8192), extent.WithBudgetAlert(8192, fn))
	if err != nil {
		t.Fatal(err)
	}
	memtest.Returns(t, "Malloc, Free, Trim and Close with an alert that calls the Shared", func() {
		a := s.Malloc(4096)
		b := s.Malloc(4096)  // the second block reaches the threshold
		fb := s.Malloc(4096) // past the budget: a heap fallback
		s.Free(b)
		s.Free(fb)
		s.Trim() // gives the second block back: below again
		s.Free(a)
		s.Close()
	})
	if len(calls) < 2 || !calls[0] || calls[len(calls)-1] {
		t.Fatalf("alert calls %v; want up first and down last", calls)
	}
}
