//go:build !memkitdebug

package arena_test

import (
	"errors"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

// What the release build catches of each mistake of the misuse suite
// (misuse_test.go, -tags memkitdebug), with its exact panics, and what it
// does not.

func TestRelease_FreeTwicePanics(t *testing.T) {
	a := arena.NewArena()
	a.Free()
	memtest.CheckPanic(t, msgFreed, a.Free)
	memtest.CheckPanic(t, msgFreed, func() { arena.New[int](a) })
}

func TestRelease_PutForeignPanics(t *testing.T) {
	p := arena.NewPool()
	memtest.CheckPanic(t, msgForeign, func() { p.Put(arena.NewArena()) })
}

// A second Put would hand one arena to two goroutines: a state bit catches
// it in O(1).
func TestRelease_PutTwicePanics(t *testing.T) {
	p := arena.NewPool()
	a := p.Get()
	p.Put(a)
	memtest.CheckPanic(t, msgPutTwice, func() { p.Put(a) })
	b := p.Get()
	c := p.Get()
	if b == c {
		t.Fatal("one arena handed out twice")
	}
	p.Put(b)
	p.Put(c)
}

// A write after Reset lands in memory the arena hands out again, which
// Reset zeroed before the write: the next object there starts with it. It
// changes no other live object.
func TestRelease_WriteAfterResetIsNotCaught(t *testing.T) {
	a := arena.NewArena()
	stale := arena.New[int64](a)
	other := arena.New[int64](a)
	*other = 2
	a.Reset()
	*stale = 1
	if p := arena.New[int64](a); p != stale || *p != 1 {
		t.Fatal("expected the object's memory back, with the write")
	}
	keep := arena.New[int64](a)
	if keep != other || *keep != 0 {
		t.Fatal("the write reached another object")
	}
}

// A stale Put, after the next Get handed the arena to another owner, is
// not caught: both owners hold the same *Arena, so no generation can tell
// them apart (see the comment in Pool.Put). It resets the next owner's
// arena, and that owner's own Put is then the one that panics.
func TestRelease_StalePutAfterNextGetIsNotCaught(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	p := arena.NewPool()
	a := p.Get()
	p.Put(a)
	b := p.Get()
	if b != a {
		t.Skip("the pool did not hand the arena back (another P)")
	}
	x := arena.New[int64](b)
	*x = 7
	if got := memtest.PanicOf(func() { p.Put(a) }); got != "" { // the stale Put
		t.Fatalf("stale Put panicked %q; the release build cannot see it", got)
	}
	if y := arena.New[int64](b); y != x || *y != 0 {
		t.Fatal("the stale Put did not reset the next owner's arena")
	}
	memtest.CheckPanic(t, msgPutTwice, func() { p.Put(b) })
}

// The use of an arena after Put is not caught: the arena is in the pool,
// and the next Get shares it. Documented on Put; the checked build
// catches it.

func TestRelease_LeaksNeedTheCheckedBuild(t *testing.T) {
	if _, err := memkit.Leaks(arena.NewPool()); !errors.Is(err, memkit.ErrNotChecked) {
		t.Fatalf("Leaks in a release build: %v; want ErrNotChecked", err)
	}
}
