package extent_test

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

// The release build's panics.
const (
	panicDoubleFree = "memkit/extent: double free"
	panicForeign    = "memkit/extent: foreign memory"
)

// newWithOthers returns an allocator holding a few live allocations apart
// from the ones a mistake uses, and intact, which checks those.
func newWithOthers(t testing.TB) (*extent.Allocator, func() error) {
	a := mustNew(t)
	m := memtest.NewModel(1)
	for _, n := range []int{64, 100, 300, 1000} {
		if _, err := m.Add(a.Malloc(n)); err != nil {
			t.Fatal(err)
		}
	}
	return a, m.VerifyAll
}

// mistakes is extent's misuse table: every mistake of the safety
// table for extent, made as a user would make it. extent has no handles,
// so there is no stale handle, and a Free whose start moved is no mistake:
// Free takes any sub-slice of a live allocation (a partial free).
var mistakes = []memtest.Mistake{
	{
		Name: "double or overlapping free", Release: "panic `" + panicDoubleFree + "`", Checked: "DoubleFree",
		Panic: panicDoubleFree, Op: "Free", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := a.Malloc(100)
			a.Free(b)
			return func() { a.Free(b[40:60]) }, intact
		},
	},
	{
		Name:    "a second Free after the range went to a new owner",
		Release: "not caught: the new owner's range is freed under it (no per-allocation state)",
		Checked: "DoubleFree at that call: a freed range waits in the quarantine (4 MiB or 4096 ranges, less if a Malloc finds no other fit) before it is reused",
		Op:      "Free", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := a.Malloc(100)
			a.Free(b)
			c := a.Malloc(100) // the same range, in the release build
			memtest.Fill(c, 7)
			return func() { a.Free(b) }, func() error {
				if err := memtest.Verify(c, 7); err != nil {
					return err
				}
				return intact()
			}
		},
	},
	{
		Name: "free of memory outside every block", Release: "panic `" + panicForeign + "`", Checked: "ForeignFree",
		Panic: panicForeign, Op: "Free", Kind: checked.ForeignFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			return func() { a.Free(make([]byte, 64)) }, intact
		},
	},
	{
		Name:    "a Free running from one allocation into the next",
		Release: "not caught: frees the first and the next one's first byte, as a spanning Free does; the next one's own Free then panics `" + panicDoubleFree + "`",
		Checked: "ForeignFree (16-byte guard tail)",
		Op:      "Free", Kind: checked.ForeignFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := a.Malloc(100)
			c := a.Malloc(100)
			memtest.Fill(c, 6)
			return func() { a.Free(unsafe.Slice(unsafe.SliceData(b), 101)) }, func() error {
				if err := memtest.Verify(c, 6); err != nil {
					return err
				}
				if err := intact(); err != nil {
					return err
				}
				return nextFreePanics(func() { a.Free(c) })
			}
		},
	},
	{
		Name:    "Free of Borrow memory",
		Release: "not caught (the Borrow chunk's bytes are freed while Borrow still uses them)",
		Checked: "ForeignFree",
		Op:      "Free", Kind: checked.ForeignFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := a.Borrow(100)
			return func() { a.Free(b) }, intact
		},
	},
	{
		Name:    "write after Free or FreeRest",
		Release: "not caught (the write stays in the freed range)",
		Checked: "UseAfterFree, reported by `memkit.Leaks`, when the range leaves the quarantine or when it is handed out again",
		Op:      "memkit.Leaks", Kind: checked.UseAfterFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := a.Malloc(100)
			a.FreeRest(b, 10)
			return func() {
				b[50] = 1
				memtest.PanicWithLeaksError(a)
			}, intact
		},
	},
	{
		Name:    "write to Borrow memory after Recycle",
		Release: "not caught (the write stays in the chunk)",
		Checked: "UseAfterFree at the next Borrow of those bytes",
		Op:      "Borrow", Kind: checked.UseAfterFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			x := a.Borrow(100)
			a.Recycle()
			return func() {
				x[3] = 1
				a.Borrow(100)
			}, intact
		},
	},
	{
		Name:    "write past the end (with unsafe)",
		Release: "not caught (append past the locked capacity reallocates)",
		Checked: "Overflow at the Free of the allocation (16-byte guard tail)",
		Op:      "Free", Kind: checked.Overflow,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := a.Malloc(100)
			return func() {
				unsafe.Slice(unsafe.SliceData(b), 101)[100] = 1
				a.Free(b)
			}, intact
		},
	},
}

func TestMistakes(t *testing.T) {
	memtest.RunMistakes(t, "extent", append(mistakes[:len(mistakes):len(mistakes)], sharedMistakes...))
}

// nextFreePanics checks the Free, free, of the allocation after one that a
// Free ran into: in the release build its first byte is free, so it panics
// "double free"; in the checked build the guard bytes stopped the run, so
// it frees the allocation.
func nextFreePanics(free func()) error {
	want := panicDoubleFree
	if checked.Enabled {
		want = ""
	}
	if got := memtest.PanicOf(free); got != want {
		return fmt.Errorf("the next allocation's own Free panicked %q; want %q", got, want)
	}
	return nil
}

// newSharedWithOthers returns a Shared holding a few live allocations apart
// from the ones a mistake uses — served by the front cache (one in the
// 112-byte class the rows use) and by a shard (above 64 KiB) — with a
// model of them, whose VerifyAll checks them.
func newSharedWithOthers(t testing.TB) (*extent.Shared, *memtest.Model) {
	s := mustShared(t)
	m := memtest.NewModel(1)
	for _, n := range []int{64, 100, 300, 1000, 100 << 10} {
		if _, err := m.Add(s.Malloc(n)); err != nil {
			t.Fatal(err)
		}
	}
	return s, m
}

// adjacentChunks returns two live n-byte allocations of s whose chunks
// are neighbours in one segment, c's chunk starting stride bytes after
// b's (stride is n's class size), from a few Mallocs; it adds the others
// to m. The checked build has no front cache: there b and c are any two.
func adjacentChunks(t testing.TB, s *extent.Shared, m *memtest.Model, n, stride int) (b, c []byte) {
	got := make([][]byte, 8)
	for i := range got {
		got[i] = s.Malloc(n)
	}
	bi, ci := 0, 1
	if !checked.Enabled {
		bi = -1
		for i := range got {
			for j := range got {
				if uintptr(unsafe.Pointer(&got[j][0])) == uintptr(unsafe.Pointer(&got[i][0]))+uintptr(stride) {
					bi, ci = i, j
				}
			}
		}
		if bi < 0 {
			t.Fatalf("no two of 8 Mallocs of %d bytes in neighbouring chunks", n)
		}
	}
	for i, x := range got {
		if i != bi && i != ci {
			if _, err := m.Add(x); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got[bi], got[ci]
}

// reusedChunk frees an n-byte allocation of s and returns it and the
// next Malloc of m bytes, of n's class, which in the release build is
// served by the same chunk: the chunk freed last is the one a Malloc of
// its class takes next, unless the goroutine moved to another P in
// between (then it tries again). The checked build's quarantine holds the
// freed range back, so there the two differ.
func reusedChunk(t testing.TB, s *extent.Shared, n, m int) (old, reused []byte) {
	for range 100 {
		b := s.Malloc(n)
		s.Free(b)
		c := s.Malloc(m)
		if checked.Enabled || &b[0] == &c[0] {
			return b, c
		}
		s.Free(c)
	}
	t.Fatalf("no Malloc of %d bytes took the chunk a Free of %d gave back", m, n)
	return nil, nil
}

// sharedMistakes are the mistakes a Shared's front cache serves apart from
// the Allocator, and those a user of a Shared makes: they run through
// TestMistakes with the Allocator's. The checked build's Shared has one
// shard and no front cache, so there each is the Allocator's.
var sharedMistakes = []memtest.Mistake{
	{
		Name: "double free, in a `Shared`", Release: "panic `" + panicDoubleFree + "` at the call: the chunk is idle (its slot holds no ticket)", Checked: "DoubleFree",
		Panic: panicDoubleFree, Op: "Free", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			s, m := newSharedWithOthers(t)
			b := s.Malloc(100)
			s.Free(b)
			return func() { s.Free(b) }, m.VerifyAll
		},
	},
	{
		Name: "a Free of part of a freed allocation, in a `Shared`", Release: "panic `" + panicDoubleFree + "` at the call: a chunk it touches is idle", Checked: "DoubleFree",
		Panic: panicDoubleFree, Op: "Free", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			s, m := newSharedWithOthers(t)
			b := s.Malloc(100)
			s.Free(b)
			return func() { s.Free(b[40:60]) }, m.VerifyAll
		},
	},
	{
		Name:    "a Free running from one allocation into the next, in a `Shared`",
		Release: "panic `" + panicDoubleFree + "` when the first is smaller than its chunk (its size is no class's): the Free detaches the chunks it touches, each giving its bytes past its Malloc back, and then finds those free; both allocations stay live",
		Checked: "ForeignFree (16-byte guard tail)",
		Panic:   panicDoubleFree, Op: "Free", Kind: checked.ForeignFree,
		Setup: func(t testing.TB) (func(), func() error) {
			s, m := newSharedWithOthers(t)
			b, c := adjacentChunks(t, s, m, 100, 112)
			memtest.Fill(b, 5)
			memtest.Fill(c, 6)
			return func() { s.Free(unsafe.Slice(unsafe.SliceData(b), 113)) }, func() error {
				if err := memtest.Verify(b, 5); err != nil {
					return err
				}
				if err := memtest.Verify(c, 6); err != nil {
					return err
				}
				if err := m.VerifyAll(); err != nil {
					return err
				}
				s.Free(b) // live still: these Frees do not panic
				s.Free(c)
				return nil
			}
		},
	},
	{
		Name:    "a Free running from one allocation into the next, both of a class's size, in a `Shared`",
		Release: "not caught: frees the first and the next one's first byte (their chunks are neighbours), as an `Allocator` does; the next one's own Free then panics `" + panicDoubleFree + "`",
		Checked: "ForeignFree (16-byte guard tail)",
		Op:      "Free", Kind: checked.ForeignFree,
		Setup: func(t testing.TB) (func(), func() error) {
			s, m := newSharedWithOthers(t)
			b, c := adjacentChunks(t, s, m, 112, 112)
			memtest.Fill(c, 6)
			return func() { s.Free(unsafe.Slice(unsafe.SliceData(b), 113)) }, func() error {
				if err := memtest.Verify(c, 6); err != nil {
					return err
				}
				if err := m.VerifyAll(); err != nil {
					return err
				}
				return nextFreePanics(func() { s.Free(c) })
			}
		},
	},
	{
		Name: "free of memory outside every block, in a `Shared`", Release: "panic `" + panicForeign + "`: no chunk, segment or shard holds it", Checked: "ForeignFree",
		Panic: panicForeign, Op: "Free", Kind: checked.ForeignFree,
		Setup: func(t testing.TB) (func(), func() error) {
			s, m := newSharedWithOthers(t)
			return func() { s.Free(make([]byte, 64)) }, m.VerifyAll
		},
	},
	{
		Name:    "a second Free after the chunk went to a new owner, in a `Shared`",
		Release: "not caught when the new owner asked for the same size: the chunk goes back to its idle set while the new owner uses it, and a later Malloc of its class can hand it out again (a new owner of another size in the class: the chunk is detached and the stale Free frees the new owner's bytes, or panics `" + panicDoubleFree + "` where it runs past them)",
		Checked: "DoubleFree at that call: a freed range waits in the quarantine (4 MiB or 4096 ranges, less if a Malloc finds no other fit) before it is reused",
		Op:      "Free", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			s, m := newSharedWithOthers(t)
			b, c := reusedChunk(t, s, 100, 100)
			memtest.Fill(c, 7)
			return func() { s.Free(b) }, func() error {
				if err := memtest.Verify(c, 7); err != nil {
					return err
				}
				if st := s.ChunkState(c); !checked.Enabled && st != "idle" {
					return fmt.Errorf("the new owner's chunk is %q; want it idle", st)
				}
				return m.VerifyAll()
			}
		},
	},
	{
		Name:    "write after Free, in a `Shared`",
		Release: "not caught: the write lands in the idle chunk, and a later Malloc of its class can hand it out with the write",
		Checked: "UseAfterFree, reported by `memkit.Leaks`, when the range leaves the quarantine or when it is handed out again",
		Op:      "memkit.Leaks", Kind: checked.UseAfterFree,
		Setup: func(t testing.TB) (func(), func() error) {
			s, m := newSharedWithOthers(t)
			b := s.Malloc(100)
			s.Free(b)
			return func() {
				b[50] = 1
				memtest.PanicWithLeaksError(s)
			}, m.VerifyAll
		},
	},
}

// A second Free after the chunk went to a new owner of another size in its
// class (see the misuse row): the stale Free detaches the chunk, whose
// bytes past the new owner's size go back, and the Allocator then frees
// the stale range: under a smaller new owner it runs into those bytes and
// panics "double free", leaving the new owner live; under a larger one it
// frees the new owner's first bytes, and the new owner's own Free then
// panics on them. Release build only: the checked build has no front
// cache, and its quarantine catches the stale Free at the call.
func TestShared_SecondFreeAfterANewOwnerOfAnotherSize(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build has no front cache")
	}
	t.Run("smaller", func(t *testing.T) {
		s, m := newSharedWithOthers(t)
		b, c := reusedChunk(t, s, 100, 98)
		memtest.Fill(c, 7)
		memtest.CheckPanic(t, panicDoubleFree, func() { s.Free(b) })
		if err := memtest.Verify(c, 7); err != nil {
			t.Fatal(err)
		}
		if err := m.VerifyAll(); err != nil {
			t.Fatal(err)
		}
		if st := s.ChunkState(c); st != "detached" {
			t.Fatalf("the new owner's chunk is %q; want it detached", st)
		}
		s.Free(c) // still live: no panic
	})
	t.Run("larger", func(t *testing.T) {
		s, m := newSharedWithOthers(t)
		b, c := reusedChunk(t, s, 100, 110)
		memtest.Fill(c, 7)
		s.Free(b) // not caught
		if st := s.ChunkState(c); st != "detached" {
			t.Fatalf("the new owner's chunk is %q; want it detached", st)
		}
		if err := memtest.Verify(c, 7); err != nil {
			t.Fatal(err)
		}
		if err := m.VerifyAll(); err != nil {
			t.Fatal(err)
		}
		memtest.CheckPanic(t, panicDoubleFree, func() { s.Free(c) })
		memtest.CheckPanic(t, panicDoubleFree, func() { s.Free(c[:1]) })
		s.Free(c[100:]) // the new owner's bytes past the stale range are still live
	})
}

// makeSharedMistakes makes, on the state a fuzz input left in s (m its
// live allocations, freed ranges it freed last), the mistakes of the
// misuse table that FuzzShared's ops do not: a Free of foreign memory; for
// each live allocation a Free running one byte past its end where no live
// allocation holds that byte (the chunk's unused tail, an idle chunk, free
// memory or none), which panics, leaving every allocation live; and a
// write into each freed range no live allocation holds, not caught but in
// the checked build (memkit.Leaks's UseAfterFree while the range waits in
// the quarantine). It returns the number of Frees that panicked. (The
// checked build reports a run into the guard bytes after an allocation
// as ForeignFree, and into a part of it freed before as DoubleFree.)
func makeSharedMistakes(t testing.TB, s *extent.Shared, m *memtest.Model, freed [][]byte) (bad uint64) {
	t.Helper()
	if foreign := func() { s.Free(make([]byte, 64)) }; !memtest.BadFreeOK("extent", "Free", foreign, []string{panicForeign}, checked.ForeignFree) {
		t.Fatalf("a Free of foreign memory: panic %q", memtest.PanicOf(foreign))
	}
	bad++
	for i := range m.Live {
		if race.Enabled {
			break // checkptr: a slice past the end of a block would straddle its heap object
		}
		b := m.Live[i].Buf
		past := unsafe.Slice(unsafe.SliceData(b), len(b)+1)
		if m.Overlaps(past[len(b):]) {
			continue
		}
		if free := func() { s.Free(past) }; !memtest.BadFreeOK("extent", "Free", free, []string{panicDoubleFree, panicForeign}, checked.ForeignFree, checked.DoubleFree) {
			t.Fatalf("a Free of %d bytes running one byte past an allocation: panic %q", len(b), memtest.PanicOf(free))
		}
		bad++
	}
	if err := m.VerifyAll(); err != nil {
		t.Fatal(err)
	}
	for _, b := range freed {
		if !m.Overlaps(b) {
			if err := memtest.WriteAfterFree(s, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	return bad
}
