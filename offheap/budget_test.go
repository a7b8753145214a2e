package offheap_test

import (
	"errors"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/offheap"
)

type alertCall struct {
	used  int64
	above bool
}

// At the budget Alloc fails with ErrBudget and changes nothing but
// Failures; the alert fires once up and once down.
func TestAllocator_Budget(t *testing.T) {
	ps := int64(offheap.PageSize())
	var calls []alertCall
	a, err := offheap.New(offheap.WithBudget(2*ps), offheap.WithBudgetAlert(2*ps, func(used int64, above bool) {
		calls = append(calls, alertCall{used, above})
	}))
	if err != nil {
		t.Fatal(err)
	}
	x, err := a.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	y, err := a.Alloc(int(ps))
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0] != (alertCall{2 * ps, true}) {
		t.Fatalf("calls %v; want one up", calls)
	}
	var before, after memkit.Stats
	a.ReadStats(&before)
	if b, err := a.Alloc(1); b != nil || !errors.Is(err, offheap.ErrBudget) {
		t.Fatalf("Alloc past the budget: %d bytes, %v", len(b), err)
	}
	a.ReadStats(&after)
	if after.InUseBytes != before.InUseBytes || after.LiveObjects != 2 || after.Failures != before.Failures+1 || after.Allocs != before.Allocs {
		t.Fatalf("failed Alloc changed the state: %v", &after)
	}
	if err := a.Free(y); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[1] != (alertCall{ps, false}) {
		t.Fatalf("calls %v; want one down", calls)
	}
	if err := a.Free(x); err != nil {
		t.Fatal(err)
	}
	// Guarded mappings charge their usable pages only.
	g, err := offheap.New(offheap.WithGuardPages(), offheap.WithBudget(ps))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Purge()
	b, err := g.Alloc(int(ps))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Free(b); err != nil {
		t.Fatal(err)
	}
	if b, err = g.Alloc(int(ps)); err != nil {
		t.Fatal("the budget was not given back by Free:", err)
	}
	_ = g.Free(b)
}

// A budget and an alert add no allocation to Alloc and Free.
func TestAllocator_BudgetZeroAllocs(t *testing.T) {
	releaseOnly(t)
	a, _ := offheap.New(offheap.WithBudget(1<<30), offheap.WithBudgetAlert(1<<20, func(int64, bool) {}))
	if got := testing.AllocsPerRun(100, func() {
		b, _ := a.Alloc(4096)
		_ = a.Free(b)
	}); got != 0 {
		t.Fatalf("Alloc+Free with a budget: %v allocs", got)
	}
}
