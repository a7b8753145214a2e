package memtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/memkit/memkit"
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

// Reported wraps a misuse table row's mistake so that, in the checked
// build, check sees the *checked.Misuse it panics with (its stacks, address
// and detail, which the row's columns do not hold) before the panic goes
// on, for RunMistakes to check its kind; any other panic goes on as it is.
// The release build runs mistake as it is.
func Reported(mistake func(), check func(m *checked.Misuse)) func() {
	if !checked.Enabled {
		return mistake
	}
	return func() {
		m, other := MisuseOf(mistake)
		if m == nil {
			if other != nil {
				panic(other)
			}
			return
		}
		check(m)
		panic(m)
	}
}

// CheckMisuse fails t unless m reports kind from op of allocator, with the
// stacks that explain it: the allocation made by test, a function of the
// package's external tests (if test is not ""), as the first frame of
// "allocated at:", and with freed, the first free made by test as the first
// frame of "first freed at:".
func CheckMisuse(t testing.TB, m *checked.Misuse, allocator, op, kind, test string, freed bool) {
	t.Helper()
	if m == nil {
		t.Fatalf("no *checked.Misuse panic; want %q", kind)
	}
	if m.Allocator != allocator || m.Op != op || m.Kind != kind {
		t.Fatalf("misuse %s/%s/%s; want %s/%s/%s\n%v", m.Allocator, m.Op, m.Kind, allocator, op, kind, m)
	}
	msg := m.Error()
	if !strings.HasPrefix(msg, "memkit/"+allocator+": "+op+": "+kind+" at 0x") {
		t.Errorf("report starts %q", msg)
	}
	if test == "" {
		return
	}
	fn := "github.com/memkit/memkit/" + allocator + "_test." + test
	want := []string{"allocated at:\n\t" + fn}
	if freed {
		want = append(want, "first freed at:\n\t"+fn)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("report lacks %q:\n%s", w, msg)
		}
	}
}

// PanicWithLeaksError calls memkit.Leaks on src and panics with its error,
// if any: the check a test makes at its end, made part of a mistake so that
// a misuse table can state what it reports. It does nothing in the release
// build, where Leaks returns memkit.ErrNotChecked.
func PanicWithLeaksError(src memkit.StatsSource) {
	if _, err := memkit.Leaks(src); err != nil && !errors.Is(err, memkit.ErrNotChecked) {
		panic(err)
	}
}
