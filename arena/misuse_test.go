package arena_test

import (
	"fmt"
	"testing"

	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/sysmem"
)

// The misuse table of package arena: each mistake a user can make with an
// Arena or a Pool, what each build does about it, and a test that makes it
// beside a witness object in another live arena (or the same one) that must
// come through intact. memtest.RunMistakes runs it in the build in use and
// keeps docs/safety.md's misuse table equal to it.

const msgNoMemory = "memkit/arena: requested size more than the system can allocate"

// witness is a live object filled with a pattern; intact reports whether
// the pattern is still there.
type witness struct {
	p    *[8]uint64
	seed uint64
}

func newWitness(a *arena.Arena, seed uint64) witness {
	w := witness{p: arena.New[[8]uint64](a), seed: seed}
	for i := range w.p {
		w.p[i] = seed*0x9e3779b97f4a7c15 + uint64(i)
	}
	return w
}

func (w witness) intact() error {
	for i, v := range w.p {
		if want := w.seed*0x9e3779b97f4a7c15 + uint64(i); v != want {
			return fmt.Errorf("word %d of a live object is %#x, want %#x", i, v, want)
		}
	}
	return nil
}

// releaseCorrupts skips the row in the release build, whose cell says the
// mistake is not caught and harms another allocation: only the checked
// build has a behaviour to assert.
func releaseCorrupts(t testing.TB) {
	if !checked.Enabled {
		t.Skip("not caught by the release build: see the row's release cell")
	}
}

func arenaMistakes() []memtest.Mistake {
	return []memtest.Mistake{
		{
			Name:    "second `Free` of an arena",
			Release: "panic `memkit/arena: use of freed arena` (a state bit, O(1))",
			Checked: "DoubleFree",
			Panic:   msgFreed, Op: "Free", Kind: checked.DoubleFree,
			Setup: func(t testing.TB) (func(), func() error) {
				a, other := arena.NewArena(), arena.NewArena()
				arena.New[int](a)
				w := newWitness(other, 1)
				a.Free()
				return a.Free, w.intact
			},
		},
		{
			Name:    "use of a freed arena (`New`, `MakeSlice`, `Append`, `Reset`, `Put`)",
			Release: "panic `memkit/arena: use of freed arena`",
			Checked: "UseAfterFree",
			Panic:   msgFreed, Op: "New", Kind: checked.UseAfterFree,
			Setup: func(t testing.TB) (func(), func() error) {
				a, other := arena.NewArena(), arena.NewArena()
				w := newWitness(other, 2)
				a.Free()
				return func() { arena.New[int](a) }, w.intact
			},
		},
		{
			Name:    "`Put` of an arena not from this pool",
			Release: "panic `memkit/arena: Put of an arena not from this pool`",
			Checked: "ForeignFree",
			Panic:   msgForeign, Op: "Put", Kind: checked.ForeignFree,
			Setup: func(t testing.TB) (func(), func() error) {
				p, q := arena.NewPool(), arena.NewPool()
				a := q.Get()
				w := newWitness(a, 3)
				return func() { p.Put(a) }, w.intact
			},
		},
		{
			Name:    "second `Put` of an arena still in the pool",
			Release: "panic `memkit/arena: Put of an arena already in the pool` (a state bit)",
			Checked: "DoubleFree",
			Panic:   msgPutTwice, Op: "Put", Kind: checked.DoubleFree,
			Setup: func(t testing.TB) (func(), func() error) {
				p := arena.NewPool()
				a, b := p.Get(), p.Get()
				w := newWitness(b, 4)
				p.Put(a)
				return func() { p.Put(a) }, w.intact
			},
		},
		{
			// Issue 13 case 2.
			Name: "second `Put` of an arena after `Get` handed it to a new owner",
			Release: "not caught: `Get` hands out the same `*Arena`, so the second `Put` resets the new owner's " +
				"arena and pools it while in use",
			Checked: "DoubleFree at the second `Put`: a put arena stays out of reuse for the next 4096 `Put`s",
			Op:      "Put", Kind: checked.DoubleFree,
			Setup: func(t testing.TB) (func(), func() error) {
				releaseCorrupts(t)
				p := arena.NewPool()
				a := p.Get()
				arena.New[int](a)
				p.Put(a)
				b := p.Get() // the next owner
				w := newWitness(b, 5)
				return func() { p.Put(a) }, w.intact
			},
		},
		{
			Name:    "negative length or capacity",
			Release: "panic `memkit/arena: negative length`",
			Checked: "the same",
			Panic:   msgNegative,
			Setup: func(t testing.TB) (func(), func() error) {
				a := arena.NewArena()
				w := newWitness(a, 6)
				return func() { arena.MakeSlice[byte](a, 0, -1) }, w.intact
			},
		},
		{
			Name:    "length greater than capacity",
			Release: "panic `memkit/arena: length greater than capacity`",
			Checked: "the same",
			Panic:   msgLenCap,
			Setup: func(t testing.TB) (func(), func() error) {
				a := arena.NewArena()
				w := newWitness(a, 7)
				return func() { arena.MakeSlice[byte](a, 2, 1) }, w.intact
			},
		},
		{
			// Issue 13 case 6.
			Name:    "a slice larger than the system can allocate",
			Release: "panic `memkit/arena: requested size more than the system can allocate` (`TryMakeSlice`: `ErrBudget`)",
			Checked: "the same",
			Panic:   msgNoMemory,
			Setup: func(t testing.TB) (func(), func() error) {
				if tib64 == 0 || sysmem.Available(uint64(tib64)) {
					t.Skip("needs a 64-bit system that refuses to map 64 TiB")
				}
				a := arena.NewArena()
				w := newWitness(a, 8)
				return func() { arena.MakeSlice[byte](a, 0, tib64) }, w.intact
			},
		},
		{
			// Issue 21 case 5.
			Name:    "an element type larger than the system can allocate (`New`, `MakeSlice`, `Typed`)",
			Release: "panic `memkit/arena: requested size more than the system can allocate` (`TryNew`, `TryMakeSlice`, `Typed.TryNew`: `ErrBudget`), asked before any value of the type is made",
			Checked: "the same",
			Panic:   msgNoMemory,
			Setup: func(t testing.TB) (func(), func() error) {
				if sysmem.Available(teraLen) {
					t.Skip("needs a 64-bit system that refuses to map 1 TiB")
				}
				a := arena.NewArena()
				w := newWitness(a, 9)
				return func() { arena.New[tera](a) }, w.intact
			},
		},
		{
			Name: "use of an arena after `Put`",
			Release: "not caught: the objects come from the arena's chunks, apart from its next owner's " +
				"unless both allocate at once (a data race), and are cleared at the next `Put`",
			Checked: "UseAfterFree",
			Op:      "New", Kind: checked.UseAfterFree,
			Setup: func(t testing.TB) (func(), func() error) {
				p := arena.NewPool()
				a, b := p.Get(), p.Get()
				w := newWitness(b, 9)
				p.Put(a)
				return func() { arena.New[[8]uint64](a)[0] = 1 }, w.intact
			},
		},
		{
			Name: "a write to an object after `Reset`",
			Release: "not caught: the next object handed out at that address starts with the write instead of " +
				"zeros",
			Checked: "UseAfterFree when the memory is handed out again (poison)",
			Op:      "New", Kind: checked.UseAfterFree,
			Setup: func(t testing.TB) (func(), func() error) {
				releaseCorrupts(t)
				a := arena.NewArena()
				stale := arena.New[[8]uint64](a)
				a.Reset()
				w := newWitness(arena.NewArena(), 10)
				return func() {
					stale[3] = 1
					if p := arena.New[[8]uint64](a); *p != [8]uint64{} {
						t.Errorf("a new object reads %v", *p)
					}
				}, w.intact
			},
		},
	}
}

func TestMistakes(t *testing.T) {
	memtest.RunMistakes(t, "arena", arenaMistakes())
}
