package clock_test

import (
	"testing"
	"time"

	"github.com/memkit/memkit/internal/clock"
)

func TestSet_ReplacesAndRestores(t *testing.T) {
	a := clock.Now()
	var f clock.Fake
	restore := clock.Set(&f)
	f.Advance(42)
	if got := clock.Now(); got != 42 {
		t.Fatalf("Now with a fake clock = %d; want 42", got)
	}
	restore()
	if b := clock.Now(); b < a {
		t.Fatalf("the real clock went back: %d after %d", b, a)
	}
}

func TestFake_RunsDueFuncsInOrderOnAdvance(t *testing.T) {
	var f clock.Fake
	var ran []int
	f.AfterFunc(2*time.Second, func() { ran = append(ran, 2) })
	f.AfterFunc(time.Second, func() {
		ran = append(ran, 1)
		f.AfterFunc(0, func() { ran = append(ran, 3) }) // set while running: waits
	})
	f.Advance(time.Second)
	if len(ran) != 1 || ran[0] != 1 {
		t.Fatalf("after 1s ran %v; want [1]", ran)
	}
	f.Advance(time.Second)
	if len(ran) != 3 || ran[1] != 2 || ran[2] != 3 {
		t.Fatalf("after 2s ran %v; want [1 2 3]", ran)
	}
}
