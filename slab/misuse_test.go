package slab_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/slab"
)

// The panics of the release build, as the misuse table states them.
const (
	panicDecRefFree  = "memkit/slab: DecRef of a free chunk"
	panicForeign     = "memkit/slab: buffer not allocated by this arena"
	panicStale       = "memkit/slab: stale handle"
	panicAddRefFree  = "memkit/slab: AddRef of a free chunk"
	panicAddRefNFree = "memkit/slab: AddRefN of a free chunk"
	panicAddRefN0    = "memkit/slab: AddRefN count 0 must be at least 1"
	panicFreeChunk   = "memkit/slab: use of a free chunk"
	panicChainedOnly = "memkit/slab: DecRef of a chunk whose only references are its chain links (DecRef twice?)"
)

// bystanders allocates n live buffers of assorted sizes from a, fills each
// with its own pattern, and returns the check that they all still hold it:
// the other allocations a mistake must leave alone.
func bystanders(alloc func(int) []byte, n int) func() error {
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = alloc(24 + 40*i)
		memtest.Fill(bufs[i], uint64(i+1))
	}
	return func() error {
		for i, b := range bufs {
			if err := memtest.Verify(b, uint64(i+1)); err != nil {
				return fmt.Errorf("bystander %d: %w", i, err)
			}
		}
		return nil
	}
}

// newArena returns an arena for one row of the table, with bystanders.
func newArena(t testing.TB) (*slab.Arena, func() error) {
	a := mustArena(t, 64, 4096, 2)
	return a, bystanders(a.Alloc, 6)
}

// caught records what a mistake panicked with, for a row's check of the
// report beyond what RunMistakes checks.
type caught struct{ v any }

// wrap returns f, recording its panic in c and panicking again with it, so
// that RunMistakes sees the same value.
func (c *caught) wrap(f func()) func() {
	return func() {
		defer func() {
			if r := recover(); r != nil {
				c.v = r
				panic(r)
			}
		}()
		f()
	}
}

// misuse checks, in the checked build, that the report names the chunk at
// p of size bytes; it returns nil in a release build.
func (c *caught) misuse(p uintptr, size int, detail string) error {
	if !checked.Enabled {
		return nil
	}
	m, _ := c.v.(*checked.Misuse)
	switch {
	case m == nil:
		return fmt.Errorf("panic %v; want a *checked.Misuse", c.v)
	case m.Addr != p || m.Size != size:
		return fmt.Errorf("misuse at %#x (%d bytes); want %#x (%d bytes)", m.Addr, m.Size, p, size)
	case !strings.Contains(m.Detail, detail):
		return fmt.Errorf("detail %q; want it to contain %q", m.Detail, detail)
	}
	return nil
}

// all returns the first error of errs.
func all(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// mistakes is slab's misuse table: every mistake the safety table
// lists for slab, made as a user would make it.
var mistakes = []memtest.Mistake{
	{
		Name: "DecRef twice", Release: "panic `" + panicDecRefFree + "`", Checked: "DoubleFree",
		Panic: panicDecRefFree, Op: "DecRef", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			b := a.Alloc(100)
			a.DecRef(b)
			var c caught
			return c.wrap(func() { a.DecRef(b) }), func() error {
				slab.PublishStats(a)
				if s := readStats(a); s.BadFrees != 1 || s.LiveObjects != 6 || s.Frees != 1 {
					return fmt.Errorf("stats %v; want 1 bad free, 1 free, the 6 bystanders live", &s)
				}
				return all(c.misuse(addr(b), 100, ""), intact())
			}
		},
	},
	{
		Name: "DecRef of a buffer the arena did not allocate", Release: "panic `" + panicForeign + "`", Checked: "ForeignFree",
		Panic: panicForeign, Op: "DecRef", Kind: checked.ForeignFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			other := mustArena(t, 64, 4096, 2).Alloc(64)
			return func() { a.DecRef(other) }, intact
		},
	},
	{
		Name:    "a late DecRef through an old `[]byte` after its chunk was reused",
		Release: "not caught: frees the new owner's chunk (keep a `Loc`, which catches it)",
		Checked: "DoubleFree: freed chunks wait in the quarantine (4096 blocks / 4 MiB)",
		Op:      "DecRef", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			b := a.Alloc(100)
			a.DecRef(b)
			c := a.Alloc(100) // b's chunk in a release build
			memtest.Fill(c, 99)
			return func() { a.DecRef(b) }, func() error {
				// The release build frees the new owner's chunk, as the
				// row says; the checked build kept b's chunk from it.
				if reused := addr(c) == addr(b); reused == checked.Enabled || a.Owns(c) == reused {
					return fmt.Errorf("c reused b's chunk: %v, c still owned: %v", reused, a.Owns(c))
				}
				return all(memtest.Verify(c, 99), intact())
			}
		},
	},
	{
		Name: "LocToBuf of a stale `Loc`, even after its chunk was reused", Release: "panic `" + panicStale + "`", Checked: "StaleHandle",
		Panic: panicStale, Op: "LocToBuf", Kind: checked.StaleHandle,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			b := a.Alloc(100)
			loc := a.BufToLoc(b)
			a.DecRef(b)
			a.Alloc(100)
			return func() { a.LocToBuf(loc) }, intact
		},
	},
	{
		Name: "LocDecRef of a stale `Loc`, even after its chunk was reused", Release: "panic `" + panicStale + "`", Checked: "StaleHandle",
		Panic: panicStale, Op: "LocDecRef", Kind: checked.StaleHandle,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			b := a.Alloc(100)
			loc := a.BufToLoc(b)
			a.DecRef(b)
			c := a.Alloc(100)
			memtest.Fill(c, 98)
			return func() { a.LocDecRef(loc) }, func() error {
				if !a.Owns(c) {
					return fmt.Errorf("the new owner's chunk was freed")
				}
				if err := memtest.Verify(c, 98); err != nil {
					return err
				}
				return intact()
			}
		},
	},
	{
		Name: "AddRef of a freed chunk", Release: "panic `" + panicAddRefFree + "`", Checked: "StaleHandle",
		Panic: panicAddRefFree, Op: "AddRef", Kind: checked.StaleHandle,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			b := a.Alloc(100)
			a.DecRef(b)
			return func() { a.AddRef(b) }, intact
		},
	},
	{
		Name: "AddRefN of a freed chunk, in a `Shared`", Release: "panic `" + panicAddRefNFree + "`", Checked: "StaleHandle",
		Panic: panicAddRefNFree, Op: "AddRefN", Kind: checked.StaleHandle,
		Setup: func(t testing.TB) (func(), func() error) {
			sh := mustShared(t, 64, 4096)
			intact := bystanders(sh.Alloc, 6)
			b := sh.Alloc(100)
			sh.DecRef(b)
			return func() { sh.AddRefN(b, 3) }, func() error {
				if c, d := sh.Alloc(100), sh.Alloc(100); &c[0] == &d[0] {
					return fmt.Errorf("the refused AddRefN left the freed chunk handed out twice")
				}
				return intact()
			}
		},
	},
	{
		Name: "AddRefN with a count below 1", Release: "panic `" + panicAddRefN0 + "`", Checked: "as release",
		Panic: panicAddRefN0,
		Setup: func(t testing.TB) (func(), func() error) {
			sh := mustShared(t, 64, 4096)
			intact := bystanders(sh.Alloc, 6)
			b := sh.Alloc(100)
			return func() { sh.AddRefN(b, 0) }, func() error {
				if !sh.DecRef(b) {
					return fmt.Errorf("the refused AddRefN changed the count")
				}
				return intact()
			}
		},
	},
	{
		Name: "SetNext of a freed chunk", Release: "panic `" + panicFreeChunk + "`", Checked: "StaleHandle",
		Panic: panicFreeChunk, Op: "SetNext", Kind: checked.StaleHandle,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			b, next := a.Alloc(100), a.Alloc(100)
			a.DecRef(b)
			return func() { a.SetNext(b, next) }, func() error {
				if !a.Owns(next) || !a.DecRef(next) {
					return fmt.Errorf("the refused SetNext changed the successor's count")
				}
				return intact()
			}
		},
	},
	{
		Name: "GetNext of a freed chunk", Release: "panic `" + panicFreeChunk + "`", Checked: "StaleHandle",
		Panic: panicFreeChunk, Op: "GetNext", Kind: checked.StaleHandle,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			b := a.Alloc(100)
			a.DecRef(b)
			return func() { a.GetNext(b) }, intact
		},
	},
	{
		Name:    "DecRef twice of a chunk a chain holds",
		Release: "panic `" + panicChainedOnly + "`", Checked: "DoubleFree",
		Panic: panicChainedOnly, Op: "DecRef", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			return chainedTwice(a, a.Alloc(64), a.Alloc(64), intact)
		},
	},
	{
		Name:    "DecRef twice of a chunk a chain holds, in a `Shared`, across shards",
		Release: "panic `" + panicChainedOnly + "`", Checked: "DoubleFree",
		Panic: panicChainedOnly, Op: "DecRef", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			sh := mustShared(t, 64, 4096, slab.WithShards(2))
			intact := bystanders(sh.Alloc, 6)
			return chainedTwice(sh, sh.AllocOn(0, 64), sh.AllocOn(1, 64), intact)
		},
	},
	{
		Name:    "write after free",
		Release: "not caught: the write lands in the chunk, which may have a new owner already",
		Checked: "UseAfterFree, reported by `memkit.Leaks` or when the chunk leaves the quarantine",
		Op:      "memkit.Leaks", Kind: checked.UseAfterFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			b := a.Alloc(100)
			a.DecRef(b)
			var c caught
			return c.wrap(func() {
					b[7] = 1
					memtest.PanicWithLeaksError(a)
				}), func() error {
					if checked.Enabled {
						return all(c.misuse(addr(b), 100, "byte 7 "), intact())
					}
					// Unzeroed, as always: the next owner reads the write.
					if n := a.Alloc(100); addr(n) != addr(b) || n[7] != 1 {
						return fmt.Errorf("the chunk did not come back with the write")
					}
					return intact()
				}
		},
	},
	{
		Name:    "a `malloc` that returns memory overlapping a slab the arena holds (a region handed out twice)",
		Release: "panic `" + panicOverlap + "` at the Alloc that grows; the memory is not used",
		Checked: "as release",
		Panic:   panicOverlap,
		Setup: func(t testing.TB) (func(), func() error) {
			region := make([]byte, 1<<15)
			n := 0
			a, err := slab.NewArena(64, 4096, 2, func(size int) []byte {
				// The fifth slab starts inside the third: a carving
				// mistake.
				off := n * size
				if n++; n == 5 {
					off = 2*size + 64
				}
				return region[off : off+size : off+size]
			})
			if err != nil {
				t.Fatal(err)
			}
			intact := bystanders(a.Alloc, 6) // 1 slab of the 64-byte class...
			big := a.Alloc(4000)             // and one of the 4096-byte class
			memtest.Fill(big, 99)
			return func() { a.Alloc(2000) }, func() error {
				return all(memtest.Verify(big, 99), intact())
			}
		},
	},
	{
		Name:    "write into the slack after an allocation (with unsafe or a view)",
		Release: "not caught (the write stays in the chunk)",
		Checked: "Overflow at the chunk's last DecRef",
		Op:      "DecRef", Kind: checked.Overflow,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			b := a.Alloc(100) // a 128-byte chunk
			if grown := append(b, 1); addr(grown) == addr(b) {
				t.Fatal("append past the capacity stayed in the chunk")
			}
			var c caught
			return c.wrap(func() {
					unsafe.Slice(unsafe.SliceData(b), 128)[110] = 1
					a.DecRef(b)
				}), func() error {
					if a.Owns(b) {
						return fmt.Errorf("the chunk was not freed")
					}
					return all(c.misuse(addr(b), 100, "byte 10 past the end"), intact())
				}
		},
	},
}

// chainedTwice sets up the mistake of issue 13's first case on a: next,
// chained after head, DecRef'd once by its owner, is DecRef'd again. The
// check after it: dropping head frees both once, and the next allocations
// are distinct and leave the bystanders alone.
func chainedTwice(a chainArena, head, next []byte, intact func() error) (func(), func() error) {
	a.SetNext(head, next)
	a.DecRef(next)
	var c caught
	return c.wrap(func() { a.DecRef(next) }), func() error {
		if !a.Owns(next) {
			return fmt.Errorf("the chain's reference was dropped")
		}
		if err := c.misuse(addr(next), 64, ""); err != nil {
			return err
		}
		a.DecRef(head)
		seen := map[uintptr]bool{}
		for range 8 {
			b, err := a.TryAlloc(64)
			if err != nil {
				return err
			}
			if seen[addr(b)] {
				return fmt.Errorf("chunk %#x handed out twice", addr(b))
			}
			seen[addr(b)] = true
			memtest.Fill(b, 77)
		}
		return intact()
	}
}

func TestMistakes(t *testing.T) {
	memtest.RunMistakes(t, "slab", mistakes)
}

// In the checked build, every report of the table starts its stacks at
// the code that made the allocation and the first free, outside slab.
func TestMistakes_ReportsStartAtTheCaller(t *testing.T) {
	if !checked.Enabled {
		t.Skip("release build: no reports")
	}
	const caller = "\n\tgithub.com/memkit/memkit/slab_test."
	for _, row := range mistakes {
		if row.Kind == "" {
			continue
		}
		t.Run(row.Name, func(t *testing.T) {
			mistake, _ := row.Setup(t)
			m, other := memtest.MisuseOf(mistake)
			if m == nil {
				t.Fatalf("panic %v; want a *checked.Misuse", other)
			}
			msg := m.Error()
			if !m.Alloc.Empty() && !strings.Contains(msg, "allocated at:"+caller) {
				t.Errorf("the allocation stack does not start in the test:\n%s", msg)
			}
			if !m.Free.Empty() && !strings.Contains(msg, "first freed at:"+caller) {
				t.Errorf("the free stack does not start in the test:\n%s", msg)
			}
		})
	}
}

// A re-sliced buffer names its chunk as well as the buffer itself: the
// chunk is found from any address inside it, so a DecRef through buf[k:]
// is no mistake in slab, and frees the right chunk.
func TestMistakes_ResliceIsNoMistake(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	b := a.Alloc(100)
	a.AddRef(b)
	if a.DecRef(b[1:]) || !a.DecRef(b[50:60]) || a.Owns(b) {
		t.Fatal("DecRef of re-slices did not count on their chunk")
	}
	wantMisuse(t, panicDecRefFree, "DecRef", checked.DoubleFree, func() { a.DecRef(b[99:]) })
}

// The checked build reports a write after free no later than memkit.Leaks,
// the check a test makes at its end, and again when the chunk leaves the
// quarantine, in an Arena and a Shared alike.
func TestMistakes_WriteAfterFreeReportedTwice(t *testing.T) {
	if !checked.Enabled {
		t.Skip("release build: not caught (see the table)")
	}
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
		memtest.CheckMisuse(t, m, "slab", "memkit.Leaks", checked.UseAfterFree, "TestMistakes_WriteAfterFreeReportedTwice", true)
		if m.Addr != addr(b) || m.Size != 100 || !strings.Contains(m.Detail, "byte 7 ") {
			t.Errorf("misuse at %#x (%d bytes), %q; want %#x, 100 bytes, byte 7", m.Addr, m.Size, m.Detail, addr(b))
		}
		m, _ = memtest.MisuseOf(a.FlushQuarantine)
		memtest.CheckMisuse(t, m, "slab", "Alloc", checked.UseAfterFree, "TestMistakes_WriteAfterFreeReportedTwice", true)
		a.DecRef(keep)
	}
}

// memkit.Leaks lists the chunks allocated and not freed, with the stack of
// each allocation, in the checked build; a release build says it cannot.
func TestLeaks(t *testing.T) {
	a := mustArena(t, 64, 4096, 2)
	keep := a.Alloc(100)
	a.DecRef(a.Alloc(10))
	leaks, err := memkit.Leaks(a)
	if !checked.Enabled {
		if !errors.Is(err, memkit.ErrNotChecked) {
			t.Fatalf("Leaks in a release build: %v; want ErrNotChecked", err)
		}
		return
	}
	if err != nil || len(leaks) != 1 {
		t.Fatalf("Leaks = %v, %v; want one", leaks, err)
	}
	l := leaks[0]
	if l.Allocator != "slab" || l.Addr != addr(keep) || l.Size != 100 || !strings.Contains(l.Stack, "slab_test.TestLeaks\n") {
		t.Fatalf("leak %v", l)
	}
	a.DecRef(keep)
	if leaks, _ := memkit.Leaks(a); len(leaks) != 0 {
		t.Fatalf("leaks after the DecRef: %v", leaks)
	}
	sh := mustShared(t, 64, 4096)
	b := sh.Alloc(64)
	if leaks, err := memkit.Leaks(sh); err != nil || len(leaks) != 1 || !strings.Contains(leaks[0].Stack, "TestLeaks") {
		t.Fatalf("Shared: Leaks = %v, %v", leaks, err)
	}
	sh.DecRef(b)
}
