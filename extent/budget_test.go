package extent_test

import (
	"errors"
	"testing"

	"github.com/memkit/memkit/extent"
)

type alertCall struct {
	used  int64
	above bool
}

// WithMaxTotal is the budget; WithBudgetAlert watches the bytes reserved,
// heap fallbacks included, and fires once up and once down.
func TestAllocator_BudgetAlert(t *testing.T) {
	var calls []alertCall
	alert := extent.WithBudgetAlert(8192, func(used int64, above bool) { calls = append(calls, alertCall{used, above}) })
	a := mustNew(t, extent.WithBlockSize(4096), extent.WithMaxTotal(8192), alert)
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
	if _, err := a.TryMalloc(n); !errors.Is(err, extent.ErrNoSpace) {
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
	if _, err := extent.New(extent.WithBudgetAlert(0, func(int64, bool) {})); err == nil ||
		err.Error() != "memkit/extent: BudgetAlert threshold 0 must be > 0" {
		t.Fatalf("New with threshold 0: %v", err)
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
	releaseOnly(t)
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
