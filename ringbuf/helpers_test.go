package ringbuf_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// wantMisuse fails t unless f panics as the build in use reports the
// mistake: with exactly msg in a release build, with a *checked.Misuse of
// the given kind, from op, in the checked build (-tags memkitdebug).
func wantMisuse(t testing.TB, msg, op, kind string, f func()) {
	t.Helper()
	if !checked.Enabled {
		memtest.CheckPanic(t, msg, f)
		return
	}
	m, other := misuseOf(f)
	switch {
	case m == nil:
		t.Fatalf("panic %v; want a *checked.Misuse %s from %s", other, kind, op)
	case m.Allocator != "ringbuf" || m.Op != op || m.Kind != kind:
		t.Fatalf("misuse %q from %s by %s; want %q from %s\n%v", m.Kind, m.Op, m.Allocator, kind, op, m)
	case !strings.HasPrefix(m.Error(), fmt.Sprintf("memkit/ringbuf: %s: %s at ", op, kind)):
		t.Fatalf("report %q", m.Error())
	}
}

// misuseOf runs f and returns the *checked.Misuse it panicked with, or
// else whatever else it panicked with.
func misuseOf(f func()) (m *checked.Misuse, other any) {
	defer func() {
		r := recover()
		m, _ = r.(*checked.Misuse)
		if m == nil {
			other = r
		}
	}()
	f()
	return nil, nil
}

// skipIfChecked skips a test of the release build's allocation counts or
// memory reuse, which the checked build changes on purpose.
func skipIfChecked(t *testing.T, why string) {
	t.Helper()
	if checked.Enabled {
		t.Skip("checked build: " + why)
	}
}
