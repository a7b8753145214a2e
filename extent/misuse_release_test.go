//go:build !memkitdebug

package extent_test

import (
	"testing"
	"unsafe"

	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/memtest"
)

// What the release build does with each mistake of the misuse suite
// (misuse_test.go runs under -tags memkitdebug). The free-range index
// catches every Free that touches a free byte or leaves the allocator's
// blocks, in O(log n) and with no per-allocation state, and a caught Free
// changes nothing. What it cannot see without per-allocation state: a Free
// that reaches from one live allocation into the next (it frees both, as a
// spanning Free does), writes after free and writes past the end through
// unsafe code. None of these makes the allocator hand out memory twice;
// they corrupt another allocation only through the caller's own later
// writes.

// afterMisuse checks that a caught misuse left the allocator sound: new
// allocations overlap neither each other nor live, whose patterns hold.
func afterMisuse(t *testing.T, a *extent.Allocator, m *memtest.Model) {
	t.Helper()
	for range 50 {
		if _, err := m.Add(a.Malloc(100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.VerifyAll(); err != nil {
		t.Fatal(err)
	}
	checkTree(t, a)
}

func TestRelease_DoubleFree(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(4096))
	m := memtest.NewModel(0)
	b := a.Malloc(100)
	if _, err := m.Add(a.Malloc(100)); err != nil {
		t.Fatal(err)
	}
	a.Free(b)
	memtest.CheckPanic(t, "memkit/extent: double free", func() { a.Free(b) })
	memtest.CheckPanic(t, "memkit/extent: double free", func() { a.Free(b[50:51]) })
	if s := readStats(a); s.BadFrees != 2 || s.Frees != 1 {
		t.Fatalf("stats %v", &s)
	}
	afterMisuse(t, a, m)
}

func TestRelease_ForeignFree(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(4096))
	m := memtest.NewModel(0)
	if _, err := m.Add(a.Malloc(100)); err != nil {
		t.Fatal(err)
	}
	memtest.CheckPanic(t, "memkit/extent: foreign memory", func() { a.Free(make([]byte, 10)) })
	other := mustNew(t)
	memtest.CheckPanic(t, "memkit/extent: foreign memory", func() { a.Free(other.Malloc(10)) })
	afterMisuse(t, a, m)
}

// A moved start is a partial free, in both builds.
func TestRelease_MovedStartIsAPartialFree(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(4096))
	b := a.Malloc(100)
	a.Free(b[1:])
	if s := readStats(a); s.InUseBytes != 1 {
		t.Fatalf("in use %d; want 1", s.InUseBytes)
	}
}

// A Free reaching past its allocation into the next live one is not
// caught: the index sees no free byte in it. It frees both, so the caller
// has freed memory it still uses; the checked build reports it.
func TestRelease_FreePastTheEndNotCaught(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(4096))
	b := a.Malloc(100)
	c := a.Malloc(100)
	a.Free(unsafe.Slice(unsafe.SliceData(b), 101))
	if s := readStats(a); s.InUseBytes != 99 {
		t.Fatalf("in use %d; want 99", s.InUseBytes)
	}
	a.Free(c[1:])
}

// Writes after free and past the end are not caught: no poison, no guard
// bytes. append past the locked capacity reallocates, so only unsafe code
// can write past the end.
func TestRelease_OverflowAndWriteAfterFreeNotCaught(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(4096))
	b := a.Malloc(100)
	c := a.Malloc(100)
	c[0] = 1
	if g := append(b, 2); &g[0] == &b[0] || c[0] != 1 {
		t.Fatal("append past the capacity wrote in place")
	}
	a.Free(b)
	b[0] = 3 // not caught
	if x := a.Malloc(100); x[0] != 3 {
		t.Fatal("the write after free is not where the next owner finds it")
	}
	a.Free(c)
}
