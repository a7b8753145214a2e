package proc

import (
	"runtime"
	"testing"
	"time"
)

func TestCPU_Grows(t *testing.T) {
	before, ok := CPU()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("CPU() not available on linux")
		}
		t.Skip("no CPU time on " + runtime.GOOS)
	}
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	if after, _ := CPU(); after-before < 20*time.Millisecond {
		t.Fatalf("50ms of spinning added %v of CPU time", after-before)
	}
}
