package slab_test

import (
	"testing"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/slab"
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

// giveBackIdle returns the chunks a Shared's idle sets hold to their slabs,
// as GCs do (see Shared.GiveBackIdle), and skips the rest of the test under
// the race detector, where the sets keep them.
func giveBackIdle(t *testing.T, sh *slab.Shared) {
	t.Helper()
	if sh.GiveBackIdle() {
		return
	}
	if race.Enabled {
		t.Skip("under the race detector a Shared's idle sets keep their chunks")
	}
	t.Fatalf("the idle sets still hold %d chunks after 100 GCs", sh.IdleHeld())
}
