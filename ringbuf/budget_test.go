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
