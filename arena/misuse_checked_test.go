//go:build memkitdebug

package arena_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

// The misuse suite: one test per mistake, each checking the report of the
// checked build (go test -tags memkitdebug).

// ptrPoisoned reports whether memory of types with pointers is poisoned:
// on 64-bit platforms only.
const ptrPoisoned = unsafe.Sizeof(uintptr(0)) == 8

// wantReport fails t unless f panics with a *checked.Misuse of kind from
// op whose report names the test function at the allocation's stack and,
// with freed, at the first free's.
func wantReport(t *testing.T, op, kind string, freed bool, f func()) *checked.Misuse {
	t.Helper()
	m, other := memtest.MisuseOf(f)
	if m == nil {
		t.Fatalf("panic %v; want a *checked.Misuse", other)
	}
	memtest.CheckMisuse(t, m, "arena", op, kind, strings.SplitN(t.Name(), "/", 2)[0], freed)
	return m
}

// skipIfRace skips a test that needs a sync.Pool to hand back what was put
// in it: under the race detector, sync.Pool drops items at random.
func skipIfRace(t *testing.T) {
	t.Helper()
	if race.Enabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
}

func TestMisuse_FreeTwice(t *testing.T) {
	a := arena.NewArena()
	arena.New[int](a)
	a.Free()
	wantReport(t, "Free", checked.DoubleFree, true, a.Free)
	ty := arena.NewTyped[int]()
	ty.Free()
	wantReport(t, "Free", checked.DoubleFree, true, ty.Free)
}

func TestMisuse_UseAfterFree(t *testing.T) {
	a := arena.NewArena()
	a.Free()
	wantReport(t, "New", checked.UseAfterFree, true, func() { arena.New[int](a) })
	wantReport(t, "Reset", checked.UseAfterFree, true, a.Reset)
}

func TestMisuse_PutForeign(t *testing.T) {
	p := arena.NewPool()
	lone, other := arena.NewArena(), arena.NewPool().Get()
	wantReport(t, "Put", checked.ForeignFree, false, func() { p.Put(lone) })
	wantReport(t, "Put", checked.ForeignFree, false, func() { p.Put(other) })
	if m, _ := memtest.MisuseOf(func() { p.Put(nil) }); m == nil || m.Kind != checked.ForeignFree {
		t.Fatalf("Put(nil): %v", m)
	}
}

func TestMisuse_PutTwice(t *testing.T) {
	p := arena.NewPool()
	a := p.Get()
	p.Put(a)
	wantReport(t, "Put", checked.DoubleFree, true, func() { p.Put(a) })
}

// An arena given back to its pool must not be used: the checked build
// catches it at the next allocation.
func TestMisuse_UseAfterPut(t *testing.T) {
	p := arena.NewPool()
	a := p.Get()
	arena.New[int](a)
	p.Put(a)
	wantReport(t, "New", checked.UseAfterFree, true, func() { arena.New[int](a) })
	b := p.Get() // the same arena, usable again (or, under -race, a new one)
	arena.New[int](b)
	p.Put(b)
}

// The moved-start mistake of pools cannot happen: objects are not freed one
// by one, so there is no pointer to give back.

// A handle of an arena is the arena itself: use after Free and after Put
// are the stale handles (above).

func TestMisuse_WriteAfterReset(t *testing.T) {
	a := arena.NewArena()
	stale := arena.New[int64](a)
	a.Reset()
	*stale = 1
	m := wantReport(t, "New", checked.UseAfterFree, true, func() { arena.New[int64](a) })
	if !strings.Contains(m.Detail, "after Reset freed it") {
		t.Errorf("detail %q", m.Detail)
	}
}

func TestMisuse_WriteAfterResetPointers(t *testing.T) {
	if !ptrPoisoned {
		t.Skip("pointerful memory is not poisoned on 32-bit platforms")
	}
	a := arena.NewArena()
	stale := arena.New[node](a)
	a.Reset()
	stale.right = stale
	wantReport(t, "New", checked.UseAfterFree, true, func() { arena.New[node](a) })
}

// Freed chunks go to the shared recycler, poisoned: the next arena to take
// the chunk finds the write, and names the arena that freed it.
func TestMisuse_WriteAfterFree(t *testing.T) {
	skipIfRace(t)
	type T [3]int64 // a type of its own, so its recycler is
	a := arena.NewArena()
	stale := arena.MakeSlice[T](a, 10, 10)
	a.Free()
	stale[0][0] = 5
	b := arena.NewArena()
	m := wantReport(t, "New", checked.UseAfterFree, true, func() { arena.MakeSlice[T](b, 10, 10) })
	if !strings.Contains(m.Detail, "after Free freed it") {
		t.Errorf("detail %q", m.Detail)
	}
}

func TestMisuse_WriteAfterPut(t *testing.T) {
	skipIfRace(t)
	p := arena.NewPool()
	a := p.Get()
	stale := arena.New[int64](a)
	p.Put(a)
	*stale = 7
	b := p.Get()
	m := wantReport(t, "New", checked.UseAfterFree, true, func() { arena.New[int64](b) })
	if !strings.Contains(m.Detail, "after Put freed it") {
		t.Errorf("detail %q", m.Detail)
	}
}

func TestMisuse_TypedWriteAfterReset(t *testing.T) {
	ty := arena.NewTyped[[2]int64]()
	p := ty.New()
	ty.New()
	ty.Reset()
	p[1] = 9
	wantReport(t, "New", checked.UseAfterFree, true, func() { ty.New() })
	if !ptrPoisoned {
		return
	}
	tp := arena.NewTyped[node]()
	q := tp.New()
	tp.Reset()
	q.left = q
	wantReport(t, "New", checked.UseAfterFree, true, func() { tp.New() })
}

// Overflow: arena objects have no slack to guard. New[T] hands out exactly
// a T, MakeSlice a slice whose capacity is exactly cap, so append past it
// moves the slice to the heap, and Append grows it within the arena's
// bookkeeping; only unsafe can write past an object, into the next one.

// Leaks: a Pool lists the arenas handed out by Get and not put back (or
// freed); a lone arena frees its objects together and lists none.
func TestMisuse_Leak(t *testing.T) {
	p := arena.NewPool()
	a, b := p.Get(), p.Get()
	p.Put(b)
	leaks, err := memkit.Leaks(p)
	if err != nil || len(leaks) != 1 || leaks[0].Allocator != "arena" ||
		leaks[0].Addr != uintptr(unsafe.Pointer(a)) || !strings.Contains(leaks[0].Stack, "arena_test.TestMisuse_Leak\n") {
		t.Fatalf("Leaks(pool) = %v, %v; want the arena not put back", leaks, err)
	}
	p.Put(a)
	if leaks, _ := memkit.Leaks(p); len(leaks) != 0 {
		t.Fatalf("leaks after Put: %v", leaks)
	}
	c := p.Get()
	c.Free() // leaves the pool for good: no leak
	if leaks, _ := memkit.Leaks(p); len(leaks) != 0 {
		t.Fatalf("leaks after Free: %v", leaks)
	}

	lone := arena.NewArena()
	arena.New[int](lone)
	if leaks, err := memkit.Leaks(lone); err != nil || len(leaks) != 0 {
		t.Fatalf("Leaks(arena) = %v, %v; want none", leaks, err)
	}
	ty := arena.NewTyped[int]()
	if leaks, err := memkit.Leaks(ty); err != nil || len(leaks) != 0 {
		t.Fatalf("Leaks(typed) = %v, %v; want none", leaks, err)
	}
}

func TestMisuse_CleanReuse(t *testing.T) {
	a := arena.NewArena(arena.WithChunkSize(256))
	ty := arena.NewTyped[rec](arena.WithChunkSize(256))
	for range 5 {
		for i := range 200 {
			n := arena.New[rec](a)
			if n.name != "" || n.next != nil {
				t.Fatal("not zeroed")
			}
			n.name, n.next = "x", n
			s := arena.MakeSlice[int](a, i%10, i%10)
			for j := range s {
				s[j] = -1
			}
			s = arena.Append(a, s, 1, 2, 3)
			r := ty.New()
			r.vals = s
		}
		a.Reset()
		ty.Reset()
	}
}
