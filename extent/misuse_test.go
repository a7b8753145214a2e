package extent_test

import (
	"testing"
	"unsafe"

	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
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
		Release: "not caught (frees both, as a spanning Free does)",
		Checked: "ForeignFree (16-byte guard tail)",
		Op:      "Free", Kind: checked.ForeignFree,
		Setup: func(t testing.TB) (func(), func() error) {
			a, intact := newWithOthers(t)
			b := a.Malloc(100)
			a.Malloc(100)
			return func() { a.Free(unsafe.Slice(unsafe.SliceData(b), 101)) }, intact
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

func TestMistakes(t *testing.T) { memtest.RunMistakes(t, "extent", mistakes) }
