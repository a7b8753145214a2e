// Package compattest holds what the drop-in packages' tests share.
package compattest

import (
	"fmt"
	"testing"

	"github.com/memkit/memkit/internal/checked"
)

// MustPanic runs f and fails t unless it panics as memkit does in the build
// in use: with exactly release (fmt.Sprint of the value) in a release build,
// with a *checked.Misuse of kind in the checked build (-tags memkitdebug).
func MustPanic(t testing.TB, release, kind string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if checked.Enabled {
			if m, ok := r.(*checked.Misuse); !ok || m.Kind != kind {
				t.Fatalf("panic %v; want a *checked.Misuse of kind %q", r, kind)
			}
			return
		}
		if r == nil || fmt.Sprint(r) != release {
			t.Fatalf("panic %v; want %q", r, release)
		}
	}()
	f()
}
