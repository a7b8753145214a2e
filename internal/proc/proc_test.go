package proc

import (
	"runtime"
	"testing"
)

// TestCPU_Available requires CPU where the system says (every unix).
func TestCPU_Available(t *testing.T) {
	if _, ok := CPU(); !ok && runtime.GOOS == "linux" {
		t.Fatal("CPU() not available on linux")
	}
}
