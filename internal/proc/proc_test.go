package proc

import (
	"runtime"
	"testing"
	"time"
)

// TestCPU_Available requires CPU where the system says (every unix).
func TestCPU_Available(t *testing.T) {
	if _, ok := CPU(); !ok && runtime.GOOS == "linux" {
		t.Fatal("CPU() not available on linux")
	}
}

// TestContextSwitches_Grow requires context switches on linux, and that a
// goroutine blocking in sleeps adds some: a thread with nothing to run
// blocks in the kernel, a voluntary switch.
func TestContextSwitches_Grow(t *testing.T) {
	n0, ok := ContextSwitches()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("ContextSwitches() not available on linux")
		}
		t.Skip("not counted here")
	}
	for range 5 {
		time.Sleep(time.Millisecond)
	}
	if n1, _ := ContextSwitches(); n1 <= n0 {
		t.Fatalf("context switches %d, then %d after five sleeps", n0, n1)
	}
}
