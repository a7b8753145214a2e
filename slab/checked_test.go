//go:build memkitdebug

package slab_test

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/slab"
)

// The misuse suite: one test per mistake, each checking the report of the
// checked build (go test -tags memkitdebug).

// wantReport fails t unless f panics with a *checked.Misuse of kind from
// op whose report names the test function at each stack it should have:
// the allocation's, and, with freed, the first free's.
func wantReport(t *testing.T, op, kind string, freed bool, f func()) *checked.Misuse {
	t.Helper()
	m, other := memtest.MisuseOf(f)
	if m == nil {
		t.Fatalf("panic %v; want a *checked.Misuse", other)
	}
	if m.Allocator != "slab" || m.Op != op || m.Kind != kind {
		t.Fatalf("misuse %s/%s/%s; want slab/%s/%s", m.Allocator, m.Op, m.Kind, op, kind)
	}
	msg := m.Error()
	name := "slab_test." + strings.SplitN(t.Name(), "/", 2)[0]
	if !strings.Contains(msg, "allocated at:\n\t"+"github.com/memkit/memkit/"+name+"\n") {
		t.Errorf("the report does not start the allocation stack at %s:\n%s", name, msg)
	}
	if freed && !strings.Contains(msg, "first freed at:\n\t"+"github.com/memkit/memkit/"+name+"\n") {
		t.Errorf("the report does not start the free stack at %s:\n%s", name, msg)
	}
	return m
}

func TestMisuse_DoubleFree(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	b := a.Alloc(100)
	a.DecRef(b)
	m := wantReport(t, "DecRef", checked.DoubleFree, true, func() { a.DecRef(b) })
	if m.Addr != addr(b) || m.Size != 100 {
		t.Errorf("misuse at %#x (%d bytes); want %#x (100 bytes)", m.Addr, m.Size, addr(b))
	}
}

// The mistake the release build cannot see: a DecRef through an old
// buffer after its chunk could have been handed out again. The quarantine
// keeps the chunk from the new owner, so the late DecRef finds it free.
func TestMisuse_DoubleFreeAfterReuse(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	b := a.Alloc(100)
	a.DecRef(b)
	c := a.Alloc(100) // in a release build, b's chunk
	if addr(c) == addr(b) {
		t.Fatal("a chunk in quarantine was handed out again")
	}
	wantReport(t, "DecRef", checked.DoubleFree, true, func() { a.DecRef(b) })
	if !a.Owns(c) {
		t.Fatal("the late DecRef freed another chunk")
	}
	a.DecRef(c)
}

func TestMisuse_DoubleFreeShared(t *testing.T) {
	sh := mustShared(t, 64, 4096, slab.WithShards(2))
	b := sh.Alloc(100)
	sh.DecRef(b)
	wantReport(t, "DecRef", checked.DoubleFree, true, func() { sh.DecRef(b) })
}

func TestMisuse_ForeignFree(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	keep := a.Alloc(64)
	other := mustArena(t, 64, 4096, 2).Alloc(64)
	for name, f := range map[string][]byte{"heap": make([]byte, 64), "other arena": other, "nil": nil} {
		m, x := memtest.MisuseOf(func() { a.DecRef(f) })
		if m == nil || m.Allocator != "slab" || m.Op != "DecRef" || m.Kind != checked.ForeignFree {
			t.Errorf("%s: panic %v %v; want a foreign free", name, m, x)
		}
	}
	sh := mustShared(t, 64, 4096)
	if m, x := memtest.MisuseOf(func() { sh.DecRef(make([]byte, 64)) }); m == nil || m.Kind != checked.ForeignFree {
		t.Errorf("Shared: panic %v %v; want a foreign free", m, x)
	}
	a.DecRef(keep)
}

// A re-sliced buffer names its chunk as well as the buffer itself: the
// chunk is found from any address inside it, so a DecRef through buf[k:]
// is no mistake in slab, and frees the right chunk.
func TestMisuse_MovedStartIsNoMistake(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	b := a.Alloc(100)
	a.AddRef(b)
	if a.DecRef(b[1:]) || !a.DecRef(b[50:60]) || a.Owns(b) {
		t.Fatal("DecRef of re-slices did not count on their chunk")
	}
	wantReport(t, "DecRef", checked.DoubleFree, true, func() { a.DecRef(b[99:]) })
}

func TestMisuse_StaleHandle(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	b := a.Alloc(100)
	loc := a.BufToLoc(b)
	a.DecRef(b)
	wantReport(t, "LocToBuf", checked.StaleHandle, true, func() { a.LocToBuf(loc) })
	wantReport(t, "LocDecRef", checked.StaleHandle, true, func() { a.LocDecRef(loc) })
	wantReport(t, "AddRef", checked.StaleHandle, true, func() { a.AddRef(b) })
}

// A write after free is reported no later than memkit.Leaks, the check a
// test makes at its end (issue 13 case 9), and again when the chunk leaves
// the quarantine.
func TestMisuse_WriteAfterFree(t *testing.T) {
	for _, shared := range []bool{false, true} {
		var a interface {
			Alloc(n int) []byte
			DecRef(buf []byte) bool
			FlushQuarantine()
			ReadStats(*memkit.Stats)
		}
		if shared {
			a = mustShared(t, 64, 4096)
		} else {
			a = mustArena(t, 64, 4096, 2)
		}
		keep := a.Alloc(10)
		b := a.Alloc(100)
		a.DecRef(b)
		b[7] = 1 // through the freed buffer
		_, err := memkit.Leaks(a)
		var m *memkit.Misuse
		if !errors.As(err, &m) {
			t.Fatalf("shared %v: Leaks = %v; want the write after free", shared, err)
		}
		memtest.CheckMisuse(t, m, "slab", "memkit.Leaks", checked.UseAfterFree, "TestMisuse_WriteAfterFree", true)
		if m.Addr != addr(b) || m.Size != 100 || !strings.Contains(m.Detail, "byte 7 ") {
			t.Errorf("misuse at %#x (%d bytes), %q; want %#x, 100 bytes, byte 7", m.Addr, m.Size, m.Detail, addr(b))
		}
		m, _ = memtest.MisuseOf(a.FlushQuarantine)
		memtest.CheckMisuse(t, m, "slab", "Alloc", checked.UseAfterFree, "TestMisuse_WriteAfterFree", true)
		a.DecRef(keep)
	}
}

func TestMisuse_OverflowIntoSlack(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	b := a.Alloc(100)                               // a 128-byte chunk
	unsafe.Slice(unsafe.SliceData(b), 128)[110] = 1 // past len and cap, inside the chunk
	m := wantReport(t, "DecRef", checked.Overflow, false, func() { a.DecRef(b) })
	if !strings.Contains(m.Detail, "byte 10 past the end") {
		t.Errorf("detail %q", m.Detail)
	}
	if a.Owns(b) {
		t.Fatal("the chunk was not freed with the report")
	}
}

func TestMisuse_Leak(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	keep := a.Alloc(100)
	a.DecRef(a.Alloc(10))
	leaks, err := memkit.Leaks(a)
	if err != nil || len(leaks) != 1 {
		t.Fatalf("Leaks = %v, %v; want one", leaks, err)
	}
	l := leaks[0]
	if l.Allocator != "slab" || l.Addr != addr(keep) || l.Size != 100 ||
		!strings.Contains(l.Stack, "slab_test.TestMisuse_Leak\n") {
		t.Fatalf("leak %v", l)
	}
	a.DecRef(keep)
	if leaks, _ := memkit.Leaks(a); len(leaks) != 0 {
		t.Fatalf("leaks after the DecRef: %v", leaks)
	}

	sh := mustShared(t, 64, 4096)
	b := sh.Alloc(64)
	if leaks, err := memkit.Leaks(sh); err != nil || len(leaks) != 1 || !strings.Contains(leaks[0].Stack, "TestMisuse_Leak") {
		t.Fatalf("Shared: Leaks = %v, %v", leaks, err)
	}
	sh.DecRef(b)
}

// The quarantine does not change what the budget allows: chunks waiting in
// it are handed out before the budget refuses a slab.
func TestMisuse_QuarantineUnderBudget(t *testing.T) {
	a := mustArena(t, 64, 1024, 2, slab.WithBudget(1024))
	for range 1000 {
		b := a.Alloc(64)
		if b == nil {
			t.Fatal("Alloc failed under the budget with chunks in quarantine")
		}
		a.DecRef(b)
	}
}

// A DecRef too many of a chained chunk names the allocation and the DecRef
// that dropped the caller's last reference, the first free in the
// caller's eyes.
func TestMisuse_DecRefTwiceOfAChainedChunk(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	head, next := a.Alloc(64), a.Alloc(64)
	a.SetNext(head, next)
	a.DecRef(next)
	m := wantReport(t, "DecRef", checked.DoubleFree, true, func() { a.DecRef(next) })
	if m.Addr != addr(next) || m.Size != 64 {
		t.Errorf("misuse at %#x (%d bytes); want %#x (64 bytes)", m.Addr, m.Size, addr(next))
	}
	a.DecRef(head)
}
