package slab_test

import (
	"testing"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// wantMisuse is memtest.WantMisuse for this package's allocator.
func wantMisuse(t testing.TB, msg, op, kind string, f func()) {
	t.Helper()
	memtest.WantMisuse(t, "slab", msg, op, kind, f)
}

// panicIs reports whether got, a panic as panicValue formats it, is how the
// build in use reports a mistake: msg in a release build, a
// *checked.Misuse of kind in the checked build.
func panicIs(got, msg, kind string) bool {
	if checked.Enabled {
		return got == "misuse: "+kind
	}
	return got == msg
}

// skipIfChecked skips a test of the release build's allocation counts or
// memory reuse, which the checked build changes on purpose.
func skipIfChecked(t *testing.T, why string) {
	t.Helper()
	if checked.Enabled {
		t.Skip("checked build: " + why)
	}
}
