//go:build memkitdebug

package buddy_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/buddy"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// The misuse suite of the checked build: one test per mistake, each
// asserting the report. A buddy block has no handle apart from the slice
// itself, so there is no stale-handle mistake to make: a stale slice freed
// again is a double free, written to is a write after free.

// checkMisuse fails t unless m reports kind for op, with the stacks that
// explain it: where the block was allocated (by the test function named
// test, if not ""), and, with freed, where it was first freed.
func checkMisuse(t *testing.T, m *checked.Misuse, op, kind, test string, freed bool) {
	t.Helper()
	memtest.CheckMisuse(t, m, "buddy", op, kind, test, freed)
}

func alloc(t *testing.T, a *buddy.Allocator, n int) []byte {
	b, err := a.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMisuse_DoubleFree(t *testing.T) {
	forEachSource(t, 1<<16, 64, func(t *testing.T, a *buddy.Allocator) {
		b, _ := a.Alloc(100)
		a.Free(b)
		checkMisuse(t, misuseOf(func() { a.Free(b) }), "Free", checked.DoubleFree, "TestMisuse_DoubleFree", true)
		// After the block merged into a larger free one, too.
		a.Coalesce()
		checkMisuse(t, misuseOf(func() { a.Free(b) }), "Free", checked.DoubleFree, "TestMisuse_DoubleFree", true)
		if x, y := alloc(t, a, 100), alloc(t, a, 100); addr(x) == addr(y) {
			t.Fatal("one block handed out twice after a reported double free")
		}
	})
}

func TestMisuse_ForeignFree(t *testing.T) {
	a := mustNew(t, 4096, 64)
	checkMisuse(t, misuseOf(func() { a.Free(make([]byte, 64)) }), "Free", checked.ForeignFree, "", false)
	other := mustNew(t, 4096, 64)
	b, _ := other.Alloc(64)
	checkMisuse(t, misuseOf(func() { a.Free(b) }), "Free", checked.ForeignFree, "", false)
	if s := readStats(a); s.BadFrees != 2 {
		t.Fatalf("BadFrees = %d; want 2", s.BadFrees)
	}
}

func TestMisuse_MovedStart(t *testing.T) {
	a := mustNew(t, 4096, 64)
	b, _ := a.Alloc(256)
	for _, moved := range [][]byte{b[1:], b[64:], unsafe.Slice(unsafe.SliceData(b), 512)} {
		checkMisuse(t, misuseOf(func() { a.Free(moved) }), "Free", checked.MovedFree, "TestMisuse_MovedStart", false)
	}
	a.Free(b) // unchanged by the reports
}

func TestMisuse_WriteAfterFree(t *testing.T) {
	a := mustNew(t, 4096, 64)
	b, _ := a.Alloc(100)
	a.Free(b)
	b[42] = 1 // after Free
	m := misuseOf(func() { _, _ = a.Alloc(100) })
	checkMisuse(t, m, "Alloc", checked.UseAfterFree, "TestMisuse_WriteAfterFree", true)
	if m.Addr != addr(b) || !strings.Contains(m.Detail, "byte 42 ") {
		t.Errorf("misuse at %#x (%s); want byte 42 of %#x", m.Addr, m.Detail, addr(b))
	}
	// In the slack past the length: the report names the block that held
	// the byte.
	c, _ := a.Alloc(1000)
	a.Free(c)
	c[:cap(c)][1010] = 1
	m = misuseOf(func() { _, _ = a.Alloc(1000) })
	checkMisuse(t, m, "Alloc", checked.UseAfterFree, "TestMisuse_WriteAfterFree", true)
	if m.Addr != addr(c) {
		t.Errorf("misuse at %#x; want %#x", m.Addr, addr(c))
	}
}

func TestMisuse_Overflow(t *testing.T) {
	a := mustNew(t, 4096, 64)
	b, _ := a.Alloc(100)
	b[:cap(b)][100] = 'x' // one past the length, inside the block
	m := misuseOf(func() { a.Free(b) })
	checkMisuse(t, m, "Free", checked.Overflow, "TestMisuse_Overflow", false)
	if !strings.Contains(m.Detail, "byte 100 of the 128-byte block") {
		t.Errorf("detail %q", m.Detail)
	}
	// A block grown by append within its capacity is freed whole.
	c, _ := a.Alloc(100)
	c = append(c, "grown"...)
	a.Free(c)
}

func TestMisuse_Leak(t *testing.T) {
	a := mustNew(t, 4096, 64)
	keep, _ := a.Alloc(100)
	x, _ := a.Alloc(200)
	a.Free(x)
	leaks, err := memkit.Leaks(a)
	if err != nil || len(leaks) != 1 {
		t.Fatalf("Leaks = %v, %v", leaks, err)
	}
	if l := leaks[0]; l.Allocator != "buddy" || l.Addr != addr(keep) || l.Size != 100 ||
		!strings.Contains(l.String(), "allocated at:\n\tgithub.com/memkit/memkit/buddy_test.TestMisuse_Leak") {
		t.Fatalf("leak %v", l)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if leaks, _ := memkit.Leaks(a); len(leaks) != 0 {
		t.Fatalf("leaks after Close: %v", leaks)
	}
}
