package arena_test

import (
	"testing"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// wantMisuse is memtest.WantMisuse for this package's allocator.
func wantMisuse(t testing.TB, msg, op, kind string, f func()) {
	t.Helper()
	memtest.WantMisuse(t, "arena", msg, op, kind, f)
}

// wantFreed fails t unless f, op on a freed arena, panics as the build in
// use reports it: "memkit/arena: use of freed arena" in a release build, a
// *checked.Misuse in the checked build (a double free for Free, a use
// after free for anything else).
func wantFreed(t testing.TB, op string, f func()) {
	t.Helper()
	kind := checked.UseAfterFree
	if op == "Free" {
		kind = checked.DoubleFree
	}
	wantMisuse(t, msgFreed, op, kind, f)
}

// tib64 is 1<<46 (64 TiB) as an int on 64-bit platforms, where a slice
// that large can be asked for and the system refuses it, and 0 on 32-bit
// ones, where it cannot be asked for.
const tib64 = int(uint64(1) << 46 & uint64(^uint(0)>>1))
