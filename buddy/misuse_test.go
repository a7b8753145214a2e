package buddy_test

import (
	"testing"
	"unsafe"

	"github.com/memkit/memkit/buddy"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// The release build's panics.
const (
	panicDoubleFree = "memkit/buddy: double free"
	panicForeign    = "memkit/buddy: foreign memory"
)

// newWithOthers returns an allocator holding a few live blocks apart from
// the ones a mistake uses, and intact, which checks those blocks.
func newWithOthers(t testing.TB) (*buddy.Allocator, func() error) {
	a := mustNew(t, 1<<16, 64)
	m := memtest.NewModel(1)
	for _, n := range []int{64, 100, 300, 1000} {
		if _, err := m.Add(mustAlloc(t, a, n)); err != nil {
			t.Fatal(err)
		}
	}
	return a, m.VerifyAll
}

// mistakes is buddy's misuse table: every mistake of the safety
// table for buddy, made as a user would make it. A block has no handle but
// the slice itself, so there is no stale handle: a stale slice freed again
// is a double free, written to a write after free.
var mistakes = []memtest.Mistake{
	{
		Name: "double free", Release: "panic `" + panicDoubleFree + "`", Checked: "DoubleFree",
		Panic: panicDoubleFree, Op: "Free", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := mustAlloc(t, a, 100)
			a.Free(b)
			return func() { a.Free(b) }, intact
		},
	},
	{
		Name:    "a second free after the block went to a new owner",
		Release: "not caught: the new owner's block is freed under it (a block carries no generation)",
		Checked: "DoubleFree at that call: a freed block waits in the quarantine (4 MiB or 4096 blocks) before it is reused",
		Op:      "Free", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := mustAlloc(t, a, 100)
			a.Free(b)
			c := mustAlloc(t, a, 100) // the same block, in the release build
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
		Name: "free of memory the allocator did not hand out", Release: "panic `" + panicForeign + "`", Checked: "ForeignFree",
		Panic: panicForeign, Op: "Free", Kind: checked.ForeignFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			return func() { a.Free(make([]byte, 64)) }, intact
		},
	},
	{
		Name: "free of a re-sliced block whose start moved", Release: "panic `" + panicForeign + "`", Checked: "MovedFree",
		Panic: panicForeign, Op: "Free", Kind: checked.MovedFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := mustAlloc(t, a, 256)
			return func() { a.Free(b[64:]) }, intact
		},
	},
	{
		Name:    "write after free",
		Release: "not caught (the write stays in the freed block)",
		Checked: "UseAfterFree, reported by `memkit.Leaks`, when the block leaves the quarantine or when it is handed out again",
		Op:      "memkit.Leaks", Kind: checked.UseAfterFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := mustAlloc(t, a, 100)
			a.Free(b)
			return func() {
				b[42] = 1
				memtest.PanicWithLeaksError(a)
			}, intact
		},
	},
	{
		Name:    "write into the slack past the length",
		Release: "not caught (the slack is part of the block)",
		Checked: "Overflow at the block's Free",
		Op:      "Free", Kind: checked.Overflow,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := mustAlloc(t, a, 100) // a 128-byte block
			return func() {
				unsafe.Slice(unsafe.SliceData(b), 128)[110] = 1
				a.Free(b)
			}, intact
		},
	},
}

func TestMistakes(t *testing.T) { memtest.RunMistakes(t, "buddy", mistakes) }
