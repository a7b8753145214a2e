package slab_test

import (
	"errors"
	"fmt"
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

// panicWithLeaksError calls memkit.Leaks on src and panics with its error,
// if any: the check a test makes at its end, made part of the mistake so
// that the table can state what it reports.
func panicWithLeaksError(src memkit.StatsSource) {
	if _, err := memkit.Leaks(src); err != nil && !errors.Is(err, memkit.ErrNotChecked) {
		panic(err)
	}
}

// mistakes is slab's misuse table: every mistake the README's safety table
// lists for slab, made as a user would make it.
var mistakes = []memtest.Mistake{
	{
		Name: "DecRef twice", Release: "panic `" + panicDecRefFree + "`", Checked: "DoubleFree",
		Panic: panicDecRefFree, Op: "DecRef", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newArena(t)
			b := a.Alloc(100)
			a.DecRef(b)
			return func() { a.DecRef(b) }, intact
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
				if err := memtest.Verify(c, 99); err != nil {
					return err
				}
				return intact()
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
			return func() {
				b[7] = 1
				panicWithLeaksError(a)
			}, intact
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
			return func() {
				unsafe.Slice(unsafe.SliceData(b), 128)[110] = 1
				a.DecRef(b)
			}, intact
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
	return func() { a.DecRef(next) }, func() error {
		if !a.Owns(next) {
			return fmt.Errorf("the chain's reference was dropped")
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
