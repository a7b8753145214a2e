package clock_test

import (
	"testing"

	"github.com/memkit/memkit/internal/clock"
)

func TestSet_ReplacesAndRestores(t *testing.T) {
	a := clock.Now()
	restore := clock.Set(func() int64 { return -42 })
	if got := clock.Now(); got != -42 {
		t.Fatalf("Now with a test clock = %d; want -42", got)
	}
	restore()
	if b := clock.Now(); b < a {
		t.Fatalf("the real clock went back: %d after %d", b, a)
	}
}
