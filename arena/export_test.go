package arena

import (
	"testing"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// Test-only access to internals.

// CheckTypedLayout fails t unless the fields of Typed[T] that the
// non-generic code reaches through typedHead are where it expects them.
func CheckTypedLayout[T any](t testing.TB) {
	t.Helper()
	var ty Typed[T]
	if got := unsafe.Offsetof(ty.c); got != headSize {
		t.Errorf("Typed[%T]: c at offset %d, want %d", *new(T), got, headSize)
	}
	if unsafe.Offsetof(ty.next) != unsafe.Offsetof(typedHead{}.next) ||
		unsafe.Offsetof(ty.n) != unsafe.Offsetof(typedHead{}.n) {
		t.Errorf("Typed[%T]: next, n at offsets %d, %d", *new(T), unsafe.Offsetof(ty.next), unsafe.Offsetof(ty.n))
	}
}

// Debug reports whether the memkitdebug build tag is set.
const Debug = checked.Enabled
