package memtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memkit/memkit/internal/checked"
)

// WantMisuse fails t unless f panics as the build in use reports a mistake:
// with exactly msg in a release build; in the checked build (-tags
// memkitdebug) with a *checked.Misuse from allocator ("slab"), of the
// given kind, from op, whose report begins "memkit/<allocator>: <op>:
// <kind> at ".
func WantMisuse(t testing.TB, allocator, msg, op, kind string, f func()) {
	t.Helper()
	if !checked.Enabled {
		CheckPanic(t, msg, f)
		return
	}
	m, other := MisuseOf(f)
	switch {
	case m == nil:
		t.Fatalf("panic %v; want a *checked.Misuse %s from %s", other, kind, op)
	case m.Allocator != allocator || m.Op != op || m.Kind != kind:
		t.Fatalf("misuse %q from %s by %s; want %q from %s\n%v", m.Kind, m.Op, m.Allocator, kind, op, m)
	case !strings.HasPrefix(m.Error(), fmt.Sprintf("memkit/%s: %s: %s at ", allocator, op, kind)):
		t.Fatalf("report %q", m.Error())
	}
}

// MisuseOf runs f and returns the *checked.Misuse it panicked with, or
// whatever else it panicked with.
func MisuseOf(f func()) (m *checked.Misuse, other any) {
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
