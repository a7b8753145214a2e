//go:build !memkitdebug

package slab_test

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/slab"
)

// What the release build catches of each mistake of the misuse suite
// (misuse_test.go, -tags memkitdebug), with its exact panics, and what it
// does not.

func TestRelease_DoubleFreePanics(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	keep := a.Alloc(10)
	b := a.Alloc(100)
	a.DecRef(b)
	memtest.CheckPanic(t, "memkit/slab: DecRef of a free chunk", func() { a.DecRef(b) })
	slab.PublishStats(a)
	if s := readStats(a); s.BadFrees != 1 || s.LiveObjects != 1 {
		t.Fatalf("stats %v", &s)
	}
	a.DecRef(keep)
}

func TestRelease_ForeignFreePanics(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	memtest.CheckPanic(t, "memkit/slab: buffer not allocated by this arena", func() { a.DecRef(make([]byte, 64)) })
	sh := mustShared(t, 64, 4096)
	memtest.CheckPanic(t, "memkit/slab: buffer not allocated by this arena", func() { sh.DecRef(make([]byte, 64)) })
}

func TestRelease_StaleLocPanicsEvenAfterReuse(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	b := a.Alloc(100)
	loc := a.BufToLoc(b)
	a.DecRef(b)
	c := a.Alloc(100) // b's chunk, handed out again
	memtest.CheckPanic(t, "memkit/slab: stale handle", func() { a.LocDecRef(loc) })
	if !a.Owns(c) {
		t.Fatal("the stale LocDecRef freed the new owner's chunk")
	}
	a.DecRef(c)
}

// The release build's one blind spot, documented on Arena: a []byte carries
// no generation, so a DecRef through an old buffer after its chunk was
// handed out again is the new owner's DecRef. Keep a Loc where a buffer's
// lifetime is not obvious; the checked build's quarantine catches it.
func TestRelease_LateDecRefThroughAnOldBufferIsNotCaught(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	b := a.Alloc(100)
	a.DecRef(b)
	c := a.Alloc(100)
	if addr(c) != addr(b) {
		t.Skip("the chunk was not handed out again")
	}
	if !a.DecRef(b) || a.Owns(c) { // frees c's chunk under its owner
		t.Fatal("expected the late DecRef to free the new owner's chunk")
	}
}

// A write after free changes only the free chunk: no live chunk is
// touched, and the next owner of the chunk gets unzeroed memory, as it
// always does.
func TestRelease_WriteAfterFreeIsNotCaught(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	b := a.Alloc(100)
	other := a.Alloc(100)
	memtest.Fill(other, 1)
	a.DecRef(b)
	b[0] = 0xff
	if c := a.Alloc(100); addr(c) != addr(b) || c[0] != 0xff {
		t.Fatal("expected the chunk back, with the write")
	}
	if err := memtest.Verify(other, 1); err != nil {
		t.Fatal(err)
	}
}

// The capacity lock keeps append inside the allocation; an unsafe write
// into the slack after it stays in its own chunk.
func TestRelease_OverflowIntoSlackIsNotCaught(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	b := a.Alloc(100) // a 128-byte chunk
	next := a.Alloc(100)
	memtest.Fill(next, 2)
	if grown := append(b, 1); unsafe.SliceData(grown) == unsafe.SliceData(b) {
		t.Fatal("append past the capacity stayed in the chunk")
	}
	unsafe.Slice(unsafe.SliceData(b), 128)[127] = 1
	if !a.DecRef(b) {
		t.Fatal("DecRef")
	}
	if err := memtest.Verify(next, 2); err != nil {
		t.Fatal(err)
	}
}

func TestRelease_LeaksNeedTheCheckedBuild(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	if _, err := memkit.Leaks(a); !errors.Is(err, memkit.ErrNotChecked) {
		t.Fatalf("Leaks in a release build: %v; want ErrNotChecked", err)
	}
}
