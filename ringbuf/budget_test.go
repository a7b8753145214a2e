package ringbuf_test

import (
	"testing"

	"github.com/memkit/memkit/ringbuf"
)

func TestRing_BudgetAlertFiresOnceEachWay(t *testing.T) {
	type call struct {
		used  int64
		above bool
	}
	var calls []call
	// 16-byte slots; the alert at 40 bytes is at 3 records.
	r := mustNew(t, 8, 16, ringbuf.WithBudgetAlert(40, func(used int64, above bool) {
		calls = append(calls, call{used, above})
	}))
	for range 2 {
		r.Write([]byte("x"))
	}
	if len(calls) != 0 {
		t.Fatalf("calls %v below the threshold", calls)
	}
	for range 4 {
		r.Write([]byte("x"))
	}
	if len(calls) != 1 || calls[0] != (call{48, true}) {
		t.Fatalf("calls %v; want one up at 48 bytes", calls)
	}
	p := make([]byte, 16)
	for range 6 {
		r.Read(p)
	}
	if len(calls) != 2 || calls[1] != (call{32, false}) {
		t.Fatalf("calls %v; want one down at 32 bytes", calls)
	}
	// Lending crosses it too.
	for range 3 {
		r.Write([]byte("x"))
	}
	g, _ := r.Peek() // the record left: 2 in the ring
	if len(calls) != 4 || calls[2] != (call{48, true}) || calls[3] != (call{32, false}) {
		t.Fatalf("calls %v; want up at 3 records, down at Peek", calls)
	}
	r.Release(g)
}

func TestRing_BudgetAlertCostsTheHotPathNoAllocation(t *testing.T) {
	var ups int
	r := mustNew(t, 4, 64, ringbuf.WithBudgetAlert(64, func(_ int64, above bool) {
		if above {
			ups++
		}
	}))
	rec, p := make([]byte, 64), make([]byte, 64)
	if n := testing.AllocsPerRun(1000, func() { r.Write(rec); r.Read(p) }); n != 0 {
		t.Fatalf("Write+Read with an alert: %v allocs; want 0", n)
	}
	if ups != 1001 {
		t.Fatalf("%d calls up; want one per Write", ups)
	}
}

// Issue 17: WithBudgetAlert is checked as in every package, by New, with
// budget.Options.Check's messages; a nil fn, once "no alert", is a
// mistake, and so is a threshold the ring's records can never reach.
func TestNew_BudgetAlertMistakes(t *testing.T) {
	fn := func(int64, bool) {}
	for _, tc := range []struct {
		opt  ringbuf.Option
		want string
	}{
		{ringbuf.WithBudgetAlert(0, fn), "memkit/ringbuf: WithBudgetAlert(0, fn): the threshold must be > 0 bytes"},
		{ringbuf.WithBudgetAlert(-1, fn), "memkit/ringbuf: WithBudgetAlert(-1, fn): the threshold must be > 0 bytes"},
		{ringbuf.WithBudgetAlert(64, nil), "memkit/ringbuf: WithBudgetAlert(64, nil): fn is nil; leave the option out for no alert"},
		{ringbuf.WithBudgetAlert(641, fn), "memkit/ringbuf: WithBudgetAlert(641, fn): the threshold is above the 640 bytes of 10 slots of 64, so the alert could never fire"},
	} {
		r, err := ringbuf.New(10, 64, tc.opt)
		if r != nil || err == nil || err.Error() != tc.want {
			t.Errorf("New = %v, %v; want nil, %q", r, err, tc.want)
		}
	}
	// At the ring's size: fires when it is full. The slots asked for count,
	// not the power of two allocated.
	var ups int
	r := mustNew(t, 3, 64, ringbuf.WithBudgetAlert(3*64, func(_ int64, above bool) {
		if above {
			ups++
		}
	}))
	for range 3 {
		if err := r.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if ups != 1 {
		t.Fatalf("%d calls up at a full ring; want 1", ups)
	}
}

// The threshold rounds up to whole records.
func TestRing_BudgetAlertRoundsToRecords(t *testing.T) {
	var got []int64
	fn := func(used int64, above bool) {
		if above {
			got = append(got, used)
		}
	}
	r := mustNew(t, 4, 100, ringbuf.WithBudgetAlert(101, fn)) // 2 records
	r.Write([]byte("x"))
	if len(got) != 0 {
		t.Fatalf("alert at one record: %v", got)
	}
	r.Write([]byte("x"))
	if len(got) != 1 || got[0] != 200 {
		t.Fatalf("calls up %v; want one at 200 bytes", got)
	}
}
