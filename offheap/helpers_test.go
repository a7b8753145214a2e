package offheap_test

import (
	"testing"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// checkBadFree runs f, a bad Free, which must panic: in the release build
// with exactly "memkit/offheap: double free or foreign memory", in the
// checked build with a *checked.Misuse of kind.
func checkBadFree(t testing.TB, kind string, f func()) {
	t.Helper()
	memtest.WantMisuse(t, "offheap", "memkit/offheap: double free or foreign memory", "Free", kind, f)
}

// releaseOnly skips a test of a release-build property the checked build
// does not keep (it allocates to record stacks).
func releaseOnly(t *testing.T) {
	t.Helper()
	if checked.Enabled {
		t.Skip("release build only: the checked build records a stack per call")
	}
}

// addr returns the address of b's first byte.
func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)]))) }
