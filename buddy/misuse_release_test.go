//go:build !memkitdebug

package buddy_test

import (
	"testing"

	"github.com/memkit/memkit/internal/memtest"
)

// What the release build does with each mistake of the misuse suite
// (misuse_test.go runs under -tags memkitdebug). One state byte per
// minBlock catches every bad Free in O(1): a double free, memory outside
// the region, and a moved start (reported as foreign memory), and a caught
// Free changes nothing. Writes after free and past the length are not
// caught: there is no poison and no guard. None of these makes the
// allocator hand out a block twice.

func TestRelease_BadFreesCaught(t *testing.T) {
	a := mustNew(t, 4096, 64)
	m := memtest.NewModel(0)
	b := mustAlloc(t, a, 256)
	if _, err := m.Add(mustAlloc(t, a, 100)); err != nil {
		t.Fatal(err)
	}
	memtest.CheckPanic(t, "memkit/buddy: foreign memory", func() { a.Free(b[1:]) })  // moved start
	memtest.CheckPanic(t, "memkit/buddy: foreign memory", func() { a.Free(b[64:]) }) // interior
	memtest.CheckPanic(t, "memkit/buddy: foreign memory", func() { a.Free(make([]byte, 8)) })
	a.Free(b)
	memtest.CheckPanic(t, "memkit/buddy: double free", func() { a.Free(b) })
	if s := readStats(a); s.BadFrees != 4 || s.Frees != 1 {
		t.Fatalf("stats %v", &s)
	}
	for range 20 {
		x, err := a.Alloc(64)
		if err != nil {
			break
		}
		if _, err := m.Add(x); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.VerifyAll(); err != nil {
		t.Fatal(err)
	}
	if err := memtest.CheckDisjoint(m); err != nil {
		t.Fatal(err)
	}
}

// Writes after free and into the slack are not caught.
func TestRelease_OverflowAndWriteAfterFreeNotCaught(t *testing.T) {
	a := mustNew(t, 4096, 64)
	b := mustAlloc(t, a, 100)
	b[:cap(b)][100] = 1 // the slack is the caller's: no guard
	a.Free(b)
	b[0] = 3 // after Free: not caught
	if x := mustAlloc(t, a, 100); x[0] != 3 {
		t.Fatal("the write after free is not where the next owner finds it")
	}
}
