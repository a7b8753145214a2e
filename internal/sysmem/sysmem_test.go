package sysmem_test

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/memkit/memkit/internal/sysmem"
)

func TestAvailable(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want bool
	}{
		{0, true},
		{sysmem.ProbeMin - 1, true},
		{sysmem.ProbeMin, true}, // 64 MiB: every machine the tests run on has it
		{sysmem.MaxAlloc + 1, false},
		{1 << 63, false},
	} {
		if got := sysmem.Available(c.n); got != c.want {
			t.Errorf("Available(%d) = %v; want %v", c.n, got, c.want)
		}
	}
}

// A size past what the machine has is refused where the kernel refuses a
// mapping that large (Linux's default heuristic overcommit does for more
// than RAM and swap together); the runtime would have ended the process.
func TestAvailable_RefusesMoreThanTheMachineHas(t *testing.T) {
	if runtime.GOOS != "linux" || sysmem.MaxAlloc < 1<<46 {
		t.Skip("needs Linux on a 64-bit platform")
	}
	mode, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	if err != nil || strings.TrimSpace(string(mode)) == "1" {
		t.Skipf("the kernel overcommits without limit (overcommit_memory %q, %v)", mode, err)
	}
	if sysmem.Available(1 << 46) {
		t.Fatal("Available(64 TiB) = true")
	}
}
