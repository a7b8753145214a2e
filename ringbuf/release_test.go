//go:build !memkitdebug

package ringbuf_test

import (
	"context"
	"errors"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/ringbuf"
)

// What the release build catches of each mistake of the misuse suite
// (misuse_test.go, -tags memkitdebug), with its exact panics, and what it
// does not. Every hand-back of a slot not lent is caught in O(1) by the
// slot's sequence number and address.

func TestRelease_HandBackTwicePanics(t *testing.T) {
	r := mustNew(t, 2, 16)
	s, _ := r.Reserve(context.Background())
	r.Commit(s, 1)
	memtest.CheckPanic(t, msgNotReserved, func() { r.Commit(s, 1) })
	g, _ := r.Peek()
	r.Release(g)
	memtest.CheckPanic(t, msgNotPeeked, func() { r.Release(g) })
	// Even laps later, when the slot is lent again.
	s2, _ := r.Reserve(context.Background())
	s3, _ := r.Reserve(context.Background()) // s's slot again
	memtest.CheckPanic(t, msgNotReserved, func() { r.Commit(s, 1) })
	r.Commit(s2, 1)
	r.Commit(s3, 1)
	if r.Len() != 2 {
		t.Fatalf("len %d; want 2", r.Len())
	}
}

// A slot of another ring at the same position, lent there too, is caught
// by its address: it would otherwise publish the other ring's slot under
// its owner.
func TestRelease_ForeignSlotPanics(t *testing.T) {
	r, other := mustNew(t, 2, 16), mustNew(t, 2, 16)
	s, _ := r.Reserve(context.Background())
	o, _ := other.Reserve(context.Background())
	memtest.CheckPanic(t, msgNotReserved, func() { r.Commit(o, 1) })
	memtest.CheckPanic(t, msgNotReserved, func() { r.Commit(ringbuf.Slot{}, 1) })
	r.Commit(s, 1)
	other.Commit(o, 1)
	g, _ := r.Peek()
	h, _ := other.Peek()
	memtest.CheckPanic(t, msgNotPeeked, func() { r.Release(h) })
	r.Release(g)
	other.Release(h)
}

func TestRelease_HandBackOutOfOrderPanics(t *testing.T) {
	r := mustNew(t, 2, 16)
	s, _ := r.Reserve(context.Background())
	memtest.CheckPanic(t, msgNotPeeked, func() { r.Release(s) })
	r.Commit(s, 1)
	g, _ := r.Peek()
	memtest.CheckPanic(t, msgNotReserved, func() { r.Commit(g, 1) })
	r.Release(g)
}

// A write through a slot's bytes after Commit changes the record the
// reader gets: the writer's own record, no other.
func TestRelease_WriteAfterCommitIsNotCaught(t *testing.T) {
	r := mustNew(t, 2, 16)
	s, _ := r.Reserve(context.Background())
	r.Commit(s, copy(s.Bytes(), "hello"))
	s.Bytes()[0] = 'j'
	p := make([]byte, 16)
	if n, _ := r.Read(p); string(p[:n]) != "jello" {
		t.Fatalf("read %q", p[:n])
	}
}

func TestRelease_LeaksNeedTheCheckedBuild(t *testing.T) {
	r := mustNew(t, 2, 16)
	if _, err := memkit.Leaks(r); !errors.Is(err, memkit.ErrNotChecked) {
		t.Fatalf("Leaks in a release build: %v; want ErrNotChecked", err)
	}
}
