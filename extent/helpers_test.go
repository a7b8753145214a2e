package extent_test

import (
	"strings"
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

// kindOf is the checked build's kind for each misuse panic of the release
// build.
var kindOf = map[string]string{
	"memkit/extent: double free":    checked.DoubleFree,
	"memkit/extent: foreign memory": checked.ForeignFree,
}

// checkBadFree runs f, a bad Free by op, which must panic: in the release
// build with exactly want, in the checked build with a *checked.Misuse of
// the kind want stands for.
func checkBadFree(t testing.TB, op, want string, f func()) {
	t.Helper()
	if !checked.Enabled {
		memtest.CheckPanic(t, want, f)
		return
	}
	m := misuseOf(f)
	if m == nil {
		t.Fatalf("no *checked.Misuse panic (%q in the release build)", want)
	}
	if m.Allocator != "extent" || m.Op != op || m.Kind != kindOf[want] {
		t.Fatalf("misuse %s/%s/%s; want extent/%s/%s\n%v", m.Allocator, m.Op, m.Kind, op, kindOf[want], m)
	}
}

// isBadFree reports whether a panic message from memtest.PanicOf is one of
// a double or foreign free, in either build.
func isBadFree(msg string) bool {
	if !checked.Enabled {
		_, ok := kindOf[msg]
		return ok
	}
	return strings.HasPrefix(msg, "memkit/extent: Free: double free at ") ||
		strings.HasPrefix(msg, "memkit/extent: Free: free of memory this allocator did not hand out at ")
}

// releaseOnly skips a test of a release-build property the checked build
// does not keep (it allocates to record stacks).
func releaseOnly(t *testing.T) {
	t.Helper()
	if checked.Enabled {
		t.Skip("release build only: the checked build records a stack per call")
	}
}
