package budget

import (
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
