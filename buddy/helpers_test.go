package buddy_test

import (
	"testing"

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
// with exactly want, in the checked build with a *checked.Misuse of kind.
func checkBadFree(t testing.TB, want, kind string, f func()) {
	t.Helper()
	if !checked.Enabled {
		memtest.CheckPanic(t, want, f)
		return
	}
	m := misuseOf(f)
	if m == nil {
		t.Fatalf("no *checked.Misuse panic (%q in the release build)", want)
	}
	if m.Allocator != "buddy" || m.Op != "Free" || m.Kind != kind {
		t.Fatalf("misuse %s/%s/%s; want buddy/Free/%s\n%v", m.Allocator, m.Op, m.Kind, kind, m)
	}
}

// badFreeOK reports whether f panicked as a bad Free should: in the
// release build with want, in the checked build with a *checked.Misuse of
// one of kinds.
func badFreeOK(want string, f func(), kinds ...string) bool {
	if !checked.Enabled {
		return memtest.PanicOf(f) == want
	}
	m := misuseOf(f)
	if m == nil || m.Allocator != "buddy" || m.Op != "Free" {
		return false
	}
	for _, k := range kinds {
		if m.Kind == k {
			return true
		}
	}
	return false
}

// releaseOnly skips a test of a release-build property the checked build
// does not keep (it allocates to record stacks).
func releaseOnly(t *testing.T) {
	t.Helper()
	if checked.Enabled {
		t.Skip("release build only: the checked build records a stack per call")
	}
}
