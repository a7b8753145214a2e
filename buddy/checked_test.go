//go:build memkitdebug

package buddy_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// The checked build's reports in more detail than TestMistakes checks: the
// detail of each, the stacks, and what Leaks lists.

func TestMisuse_ForeignFree(t *testing.T) {
	a := mustNew(t, 4096, 64)
	memtest.WantMisuse(t, "buddy", panicForeign, "Free", checked.ForeignFree, func() { a.Free(make([]byte, 64)) })
	other := mustNew(t, 4096, 64)
	b, _ := other.Alloc(64)
	memtest.WantMisuse(t, "buddy", panicForeign, "Free", checked.ForeignFree, func() { a.Free(b) })
	if s := readStats(a); s.BadFrees != 2 {
		t.Fatalf("BadFrees = %d; want 2", s.BadFrees)
	}
}

func TestMisuse_MovedStart(t *testing.T) {
	a := mustNew(t, 4096, 64)
	b, _ := a.Alloc(256)
	for _, moved := range [][]byte{b[1:], b[64:], unsafe.Slice(unsafe.SliceData(b), 512)} {
		m, _ := memtest.MisuseOf(func() { a.Free(moved) })
		memtest.CheckMisuse(t, m, "buddy", "Free", checked.MovedFree, "TestMisuse_MovedStart", false)
	}
	a.Free(b) // unchanged by the reports
}

func TestMisuse_Overflow(t *testing.T) {
	a := mustNew(t, 4096, 64)
	b, _ := a.Alloc(100)
	b[:cap(b)][100] = 'x' // one past the length, inside the block
	m, _ := memtest.MisuseOf(func() { a.Free(b) })
	memtest.CheckMisuse(t, m, "buddy", "Free", checked.Overflow, "TestMisuse_Overflow", false)
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
	if l := leaks[0]; l.Allocator != "buddy" || l.Addr != memtest.Addr(keep) || l.Size != 100 ||
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
