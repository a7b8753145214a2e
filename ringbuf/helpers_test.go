package ringbuf_test

import (
	"testing"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// wantMisuse is memtest.WantMisuse for this package's allocator.
func wantMisuse(t testing.TB, msg, op, kind string, f func()) {
	t.Helper()
	memtest.WantMisuse(t, "ringbuf", msg, op, kind, f)
}

// skipIfChecked skips a test of the release build's allocation counts or
// memory reuse, which the checked build changes on purpose.
func skipIfChecked(t *testing.T, why string) {
	t.Helper()
	if checked.Enabled {
		t.Skip("checked build: " + why)
	}
}
