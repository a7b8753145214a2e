package memkit_test

import (
	"errors"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
)

func TestLeaks_Release(t *testing.T) {
	if checked.Enabled {
		t.Skip("release build only")
	}
	if _, err := memkit.Leaks(threeClasses()); !errors.Is(err, memkit.ErrNotChecked) {
		t.Fatalf("Leaks in a release build: %v; want ErrNotChecked", err)
	}
}

func TestLeaks_NotAnAllocator(t *testing.T) {
	if !checked.Enabled {
		t.Skip("checked build only")
	}
	if _, err := memkit.Leaks(threeClasses()); err == nil {
		t.Fatal("Leaks of a non-allocator: no error")
	}
}

// A write into a block that waits in an allocator's quarantine is reported
// by the next Leaks, as a *memkit.Misuse that errors.As finds.
func TestLeaks_ReportsAWriteAfterFree(t *testing.T) {
	if !checked.Enabled {
		t.Skip("checked build only")
	}
	src := threeClasses()
	tr := checked.NewTracker("fake")
	checked.Register(src, tr)
	mem := make([]byte, 32)
	tr.Alloc(0x1000, len(mem), 0)
	tr.Hold("Put", tr.Free("Put", 0x1000, 0), mem, func() {})
	if leaks, err := memkit.Leaks(src); len(leaks) != 0 || err != nil {
		t.Fatalf("Leaks before the write: %v, %v", leaks, err)
	}
	mem[3] = 'x'
	_, err := memkit.Leaks(src)
	var m *memkit.Misuse
	if !errors.As(err, &m) || m.Kind != checked.UseAfterFree || m.Addr != 0x1000 || m.Allocator != "fake" {
		t.Fatalf("Leaks after a write to a freed block: %v; want a write after free at 0x1000", err)
	}
}
