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
