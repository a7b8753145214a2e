package buddy_test

import (
	"errors"
	"testing"

	"github.com/memkit/memkit/buddy"
	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/memtest"
)

type alertCall struct {
	used  int64
	above bool
}

// The region is the budget: Alloc past it fails with ErrNoSpace and
// changes nothing. WithBudgetAlert watches the bytes handed out and fires
// once up and once down.
func TestAllocator_BudgetAlert(t *testing.T) {
	var calls []alertCall
	a := mustNew(t, 4096, 64, buddy.WithBudgetAlert(2048, func(used int64, above bool) {
		calls = append(calls, alertCall{used, above})
	}))
	x := mustAlloc(t, a, 1000) // 1 KiB
	y := mustAlloc(t, a, 600)  // 1 KiB: 2 KiB in use
	if len(calls) != 1 || calls[0] != (alertCall{2048, true}) {
		t.Fatalf("calls %v; want one up at 2048", calls)
	}
	z := mustAlloc(t, a, 2048)
	before := readStats(a)
	if _, err := a.Alloc(64); !errors.Is(err, buddy.ErrNoSpace) {
		t.Fatalf("Alloc past the region: %v", err)
	}
	if after := readStats(a); after.InUseBytes != before.InUseBytes || after.Failures != before.Failures+1 || after.Allocs != before.Allocs {
		t.Fatalf("failed Alloc changed the state: %v", &after)
	}
	a.Free(z)
	a.Free(y)
	if len(calls) != 2 || calls[1] != (alertCall{1024, false}) {
		t.Fatalf("calls %v; want one down at 1024", calls)
	}
	a.Free(x)
	if len(calls) != 2 {
		t.Fatalf("calls %v", calls)
	}
}

// ErrNoSpace is of the fixed-region kind every package's ErrNoSpace shares,
// not a budget error.
func TestErrNoSpace_Kind(t *testing.T) {
	a := mustNew(t, 4096, 64)
	_, err := a.Alloc(8192)
	if err != buddy.ErrNoSpace || err.Error() != "memkit/buddy: no free block large enough" {
		t.Fatalf("Alloc past the region: %v", err)
	}
	if !errors.Is(err, budget.NewErrNoSpace("x", "")) || errors.Is(err, budget.NewErrBudget("x", "")) {
		t.Fatal("ErrNoSpace is not of the no-space kind only")
	}
}

func TestAllocator_BudgetAlertOnClose(t *testing.T) {
	var calls []alertCall
	a := mustNew(t, 4096, 64, buddy.WithBudgetAlert(64, func(used int64, above bool) { calls = append(calls, alertCall{used, above}) }))
	mustAlloc(t, a, 10)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[1] != (alertCall{0, false}) {
		t.Fatalf("calls %v", calls)
	}
}

// The alert costs the hot path an add and a compare: no allocation.
func TestAllocator_BudgetAlertZeroAllocs(t *testing.T) {
	memtest.ReleaseOnly(t)
	calls := 0
	a := mustNew(t, 1<<20, 64, buddy.WithBudgetAlert(1<<19, func(int64, bool) { calls++ }))
	big := mustAlloc(t, a, 1<<19) // above
	if got := testing.AllocsPerRun(100, func() {
		b, _ := a.Alloc(100)
		a.Free(b)
	}); got != 0 {
		t.Fatalf("Alloc+Free with an alert: %v allocs", got)
	}
	a.Free(big)
	if calls != 2 {
		t.Fatalf("%d calls; want 2", calls)
	}
}
