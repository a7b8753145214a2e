//go:build memkitdebug

package ringbuf_test

import (
	"context"
	"strings"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/ringbuf"
)

// The misuse suite of ringbuf's lent slots: one test per mistake, each
// checking the report of the checked build (go test -tags memkitdebug).

// wantReport fails t unless f panics with a *checked.Misuse of kind from
// op whose report names the test function at the stack of the lend and,
// with back, of its first hand-back.
func wantReport(t *testing.T, op, kind string, back bool, f func()) *checked.Misuse {
	t.Helper()
	m, other := memtest.MisuseOf(f)
	if m == nil {
		t.Fatalf("panic %v; want a *checked.Misuse", other)
	}
	memtest.CheckMisuse(t, m, "ringbuf", op, kind, t.Name(), back)
	return m
}

func TestMisuse_CommitTwice(t *testing.T) {
	r := mustNew(t, 4, 16)
	s, _ := r.Reserve(context.Background())
	r.Commit(s, 3)
	wantReport(t, "Commit", checked.DoubleFree, true, func() { r.Commit(s, 3) })
	if r.Len() != 1 {
		t.Fatalf("len %d after a refused Commit; want 1", r.Len())
	}
}

func TestMisuse_ReleaseTwice(t *testing.T) {
	r := mustNew(t, 4, 16)
	r.Write([]byte("abc"))
	g, _ := r.Peek()
	r.Release(g)
	wantReport(t, "Release", checked.DoubleFree, true, func() { r.Release(g) })
}

// A slot of another ring, or the zero Slot: lent by no Reserve or Peek of
// this ring.
func TestMisuse_ForeignSlot(t *testing.T) {
	r, other := mustNew(t, 4, 16), mustNew(t, 4, 16)
	s, _ := r.Reserve(context.Background())
	o, _ := other.Reserve(context.Background())
	for name, f := range map[string]func(){
		"Commit of another ring's slot": func() { r.Commit(o, 1) },
		"Commit of the zero Slot":       func() { r.Commit(ringbuf.Slot{}, 1) },
		"Release of the zero Slot":      func() { r.Release(ringbuf.Slot{}) },
	} {
		if m, x := memtest.MisuseOf(f); m == nil || m.Allocator != "ringbuf" || m.Kind != checked.ForeignFree {
			t.Errorf("%s: panic %v %v; want a foreign free", name, m, x)
		}
	}
	r.Commit(s, 1)
	other.Commit(o, 1)
	if r.Len() != 1 || other.Len() != 1 {
		t.Fatal("a refused Commit changed a ring")
	}
}

// A Slot is opaque: its start cannot move, so a moved-start hand-back
// cannot happen; one handed to the other operation is a stale handle.
func TestMisuse_HandBackOutOfOrder(t *testing.T) {
	r := mustNew(t, 4, 16)
	s, _ := r.Reserve(context.Background())
	m := wantReport(t, "Release", checked.StaleHandle, false, func() { r.Release(s) })
	if !strings.Contains(m.Detail, "lent by Reserve") {
		t.Errorf("detail %q", m.Detail)
	}
	r.Commit(s, 2)
	g, _ := r.Peek()
	wantReport(t, "Commit", checked.StaleHandle, false, func() { r.Commit(g, 2) })
	r.Release(g)
}

// A write through a reserved slot's bytes after Commit is found when the
// record is read.
func TestMisuse_WriteAfterCommit(t *testing.T) {
	r := mustNew(t, 4, 16)
	s, _ := r.Reserve(context.Background())
	n := copy(s.Bytes(), "hello")
	r.Commit(s, n)
	s.Bytes()[1] = 'a'
	p := make([]byte, 16)
	wantReport(t, "Read", checked.UseAfterFree, true, func() { r.Read(p) })
	if r.Len() != 0 {
		t.Fatal("the reported record is still in the ring")
	}
	r.Write([]byte("next"))
	if n, ok := r.Read(p); !ok || string(p[:n]) != "next" {
		t.Fatal("the ring is not usable after the report")
	}
}

// The slack after a committed record, the rest of its slot, is guarded too.
func TestMisuse_WriteIntoSlackAfterCommit(t *testing.T) {
	r := mustNew(t, 4, 16)
	s, _ := r.Reserve(context.Background())
	r.Commit(s, 4)
	s.Bytes()[10] = 1
	g := ringbuf.Slot{}
	m := wantReport(t, "Peek", checked.UseAfterFree, true, func() { g, _ = r.Peek() })
	if !strings.Contains(m.Detail, "byte 6 past the 4-byte record") {
		t.Errorf("detail %q", m.Detail)
	}
	_ = g
}

// A write through a peeked slot's bytes after Release is found when a
// writer claims the slot on the next lap.
func TestMisuse_WriteAfterRelease(t *testing.T) {
	r := mustNew(t, 2, 16)
	r.Write([]byte("a"))
	g, _ := r.Peek()
	r.Release(g)
	unsafe.Slice(unsafe.SliceData(g.Bytes()), 16)[0] = 'x'
	r.Write([]byte("b")) // the other slot
	wantReport(t, "Write", checked.UseAfterFree, true, func() { r.Write([]byte("c")) })
}

func TestMisuse_Leak(t *testing.T) {
	r := mustNew(t, 4, 16)
	s, _ := r.Reserve(context.Background())
	r.Write([]byte("x"))
	leaks, err := memkit.Leaks(r)
	if err != nil || len(leaks) != 1 || leaks[0].Allocator != "ringbuf" || leaks[0].Size != 16 ||
		!strings.Contains(leaks[0].Stack, "ringbuf_test.TestMisuse_Leak\n") {
		t.Fatalf("Leaks = %v, %v; want the reserved slot", leaks, err)
	}
	r.Commit(s, 0)
	if leaks, _ := memkit.Leaks(r); len(leaks) != 0 {
		t.Fatalf("leaks after the Commit: %v", leaks)
	}
}
