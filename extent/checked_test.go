//go:build memkitdebug

package extent_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// The checked build's reports in more detail than TestMistakes checks (the
// detail of each, the stacks, what Leaks lists). extent has no handles, so there is no stale-handle
// mistake to make, and a Free whose start moved is no mistake: Free takes
// any sub-slice of a live allocation (a partial free). What is a mistake
// is a Free of a range that is partly free already, or reaches outside the
// allocations it starts in (into guard bytes, Borrow memory or memory never
// handed out).

func newAllocator(t *testing.T) *extent.Allocator {
	a := mustNew(t, extent.WithBlockSize(4096))
	t.Cleanup(a.Close)
	return a
}

func TestMisuse_DoubleFreeOfAPart(t *testing.T) {
	a := newAllocator(t)
	b := a.Malloc(100)
	a.Free(b[20:30])
	// The whole allocation: its bytes 20 to 30 are free already.
	m, _ := memtest.MisuseOf(func() { a.Free(b) })
	memtest.CheckMisuse(t, m, "extent", "Free", checked.DoubleFree, "TestMisuse_DoubleFreeOfAPart", true)
	if !strings.Contains(m.Detail, "from byte 20 of the 100 freed") {
		t.Errorf("detail %q", m.Detail)
	}
	a.Free(b[:20])
	a.Free(b[30:])
}

func TestMisuse_ForeignFree(t *testing.T) {
	a := newAllocator(t)
	a.Malloc(10)
	memtest.WantMisuse(t, "extent", panicForeign, "Free", checked.ForeignFree, func() { a.Free(make([]byte, 64)) })
	other := newAllocator(t)
	memtest.WantMisuse(t, "extent", panicForeign, "Free", checked.ForeignFree, func() { a.Free(other.Malloc(10)) })
	sh, _ := extent.NewShared()
	memtest.WantMisuse(t, "extent", panicForeign, "Free", checked.ForeignFree, func() { sh.Free(make([]byte, 8)) })
}

// A Free whose start moved frees part of the allocation: not a mistake.
// What stays live is reported by Leaks with the allocation's stack.
func TestMisuse_MovedStartIsAPartialFree(t *testing.T) {
	a := newAllocator(t)
	b := a.Malloc(100)
	a.Free(b[1:])
	leaks, err := memkit.Leaks(a)
	if err != nil || len(leaks) != 1 || leaks[0].Addr != memtest.Addr(b) || leaks[0].Size != 1 ||
		!strings.Contains(leaks[0].Stack, "extent_test.TestMisuse_MovedStartIsAPartialFree") {
		t.Fatalf("Leaks = %v, %v", leaks, err)
	}
	a.Free(b[:1])
	if leaks, _ := memkit.Leaks(a); len(leaks) != 0 {
		t.Fatalf("Leaks after freeing all: %v", leaks)
	}
}

// A Free that runs past an allocation into its guard bytes.
func TestMisuse_FreePastTheEnd(t *testing.T) {
	a := newAllocator(t)
	b := a.Malloc(100)
	a.Malloc(100)
	past := unsafe.Slice(unsafe.SliceData(b), len(b)+1)
	m, _ := memtest.MisuseOf(func() { a.Free(past) })
	memtest.CheckMisuse(t, m, "extent", "Free", checked.ForeignFree, "TestMisuse_FreePastTheEnd", false)
	if !strings.Contains(m.Detail, "guard bytes") {
		t.Errorf("detail %q", m.Detail)
	}
	a.Free(b) // unchanged by the report
}

// Borrow memory is given back by Recycle; a Free of it is a mistake.
func TestMisuse_FreeBorrowed(t *testing.T) {
	a := newAllocator(t)
	b := a.Borrow(100)
	m, _ := memtest.MisuseOf(func() { a.Free(b) })
	memtest.CheckMisuse(t, m, "extent", "Free", checked.ForeignFree, "", false)
	if !strings.Contains(m.Detail, "Borrow") {
		t.Errorf("detail %q", m.Detail)
	}
}

// Borrowed memory written after Recycle: the next Borrow of it reports
// the Borrow and the Recycle.
func TestMisuse_WriteAfterRecycle(t *testing.T) {
	a := newAllocator(t)
	x := a.Borrow(100)
	a.Recycle()
	x[3] = 1
	m, _ := memtest.MisuseOf(func() { a.Borrow(100) })
	memtest.CheckMisuse(t, m, "extent", "Borrow", checked.UseAfterFree, "TestMisuse_WriteAfterRecycle", true)
	if m.Addr != memtest.Addr(x) {
		t.Errorf("misuse at %#x; want %#x", m.Addr, memtest.Addr(x))
	}
}

func TestMisuse_Overflow(t *testing.T) {
	for _, tc := range []struct {
		name string
		free func(a *extent.Allocator, b []byte)
		op   string
	}{
		{"Free", func(a *extent.Allocator, b []byte) { a.Free(b) }, "Free"},
		{"FreeOfAPart", func(a *extent.Allocator, b []byte) { a.Free(b[:10]) }, "Free"},
		{"FreeRest", func(a *extent.Allocator, b []byte) { a.FreeRest(b, 10) }, "FreeRest"},
	} {
		t.Run("op="+tc.name, func(t *testing.T) {
			a := newAllocator(t)
			b := a.Malloc(100)
			unsafe.Slice(unsafe.SliceData(b), 101)[100] = 'x' // one past the end
			m, _ := memtest.MisuseOf(func() { tc.free(a, b) })
			memtest.CheckMisuse(t, m, "extent", tc.op, checked.Overflow, "TestMisuse_Overflow", false)
			if !strings.Contains(m.Detail, "guard byte 0 ") {
				t.Errorf("detail %q", m.Detail)
			}
		})
	}
}

func TestMisuse_Leak(t *testing.T) {
	a := newAllocator(t)
	keep := a.Malloc(100)
	a.Free(a.Malloc(50))
	a.Free(keep[60:])
	leaks, err := memkit.Leaks(a)
	if err != nil || len(leaks) != 1 {
		t.Fatalf("Leaks = %v, %v", leaks, err)
	}
	l := leaks[0]
	if l.Allocator != "extent" || l.Addr != memtest.Addr(keep) || l.Size != 60 ||
		!strings.Contains(l.String(), "allocated at:\n\tgithub.com/memkit/memkit/extent_test.TestMisuse_Leak") {
		t.Fatalf("leak %v", l)
	}
	// A Shared allocator reports through its own pointer; Close ends
	// every allocation.
	sh, _ := extent.NewShared()
	sh.Malloc(10)
	if leaks, err := memkit.Leaks(sh); err != nil || len(leaks) != 1 || !strings.Contains(leaks[0].Stack, "TestMisuse_Leak") {
		t.Fatalf("Shared leaks = %v, %v", leaks, err)
	}
	sh.Close()
	if leaks, _ := memkit.Leaks(sh); len(leaks) != 0 {
		t.Fatalf("leaks after Close: %v", leaks)
	}
}

// A Free spanning several allocations is allowed, in the checked build
// too, as long as it covers the guard bytes between them.
func TestMisuse_SpanningFree(t *testing.T) {
	a := newAllocator(t)
	x := a.Malloc(100)
	a.Malloc(100)
	z := a.Malloc(100)
	a.Free(unsafe.Slice(unsafe.SliceData(x), memtest.Addr(z)+uintptr(len(z))-memtest.Addr(x)))
	if leaks, _ := memkit.Leaks(a); len(leaks) != 0 {
		t.Fatalf("leaks: %v", leaks)
	}
	// Ending inside the guard bytes of an allocation is not.
	x, y := a.Malloc(100), a.Malloc(100)
	m, _ := memtest.MisuseOf(func() { a.Free(unsafe.Slice(unsafe.SliceData(x), memtest.Addr(y)-memtest.Addr(x)-1)) })
	memtest.CheckMisuse(t, m, "extent", "Free", checked.ForeignFree, "TestMisuse_SpanningFree", false)
}
