package offheap_test

import (
	"testing"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// misuseOf runs f and returns the *checked.Misuse it panicked with, or nil
// if it returned or panicked with something else.
func misuseOf(f func()) (m *checked.Misuse) {
	defer func() { m, _ = recover().(*checked.Misuse) }()
	f()
	return nil
}

// checkBadFree runs f, a bad Free, which must panic: in the release build
// with exactly "memkit/offheap: double free or foreign memory", in the
// checked build with a *checked.Misuse of kind.
func checkBadFree(t testing.TB, kind string, f func()) {
	t.Helper()
	if !checked.Enabled {
		memtest.CheckPanic(t, "memkit/offheap: double free or foreign memory", f)
		return
	}
	m := misuseOf(f)
	if m == nil {
		t.Fatalf("no *checked.Misuse panic; want %q", kind)
	}
	if m.Allocator != "offheap" || m.Op != "Free" || m.Kind != kind {
		t.Fatalf("misuse %s/%s/%s; want offheap/Free/%s\n%v", m.Allocator, m.Op, m.Kind, kind, m)
	}
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
