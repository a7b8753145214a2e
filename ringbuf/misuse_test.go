package ringbuf_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/ringbuf"
)

// The misuse table of package ringbuf: each mistake a user can make with a
// Ring, what each build does about it, and a test that makes it beside a
// witness record that must come through intact. memtest.RunMistakes runs it
// in the build in use and keeps docs/safety.md's misuse table equal to it.

const (
	msgNotReserved = "memkit/ringbuf: Commit of a slot not reserved"
	msgNotPeeked   = "memkit/ringbuf: Release of a slot not peeked"
	msgShortRead   = "memkit/ringbuf: Read buffer shorter than a slot"
	msgCommitRange = "memkit/ringbuf: Commit length outside the slot"
	msgNilContext  = "memkit/ringbuf: nil Context"
)

// witness is a record written into a ring before a mistake; intact reads
// the ring empty and reports an error unless the witness came out once,
// with its bytes, beside the records listed in also (in any order).
type witness struct {
	r    *ringbuf.Ring
	want string
}

func newWitness(r *ringbuf.Ring) witness {
	w := witness{r: r, want: fmt.Sprintf("witness %p", r)[:16]}
	if err := r.Write([]byte(w.want)); err != nil {
		panic(err)
	}
	return w
}

func (w witness) intact(also ...string) func() error {
	return func() error {
		left := map[string]int{w.want: 1}
		for _, s := range also {
			left[s]++
		}
		p := make([]byte, w.r.SlotSize())
		for {
			n, ok := w.r.Read(p)
			if !ok {
				break
			}
			if left[string(p[:n])] == 0 {
				return fmt.Errorf("read %q, not a record written", p[:n])
			}
			left[string(p[:n])]--
		}
		for s, n := range left {
			if n != 0 {
				return fmt.Errorf("record %q missing", s)
			}
		}
		return nil
	}
}

func ringMistakes() []memtest.Mistake {
	bg := context.Background()
	return []memtest.Mistake{
		{
			Name:    "second `Commit` of a slot",
			Release: "panic `memkit/ringbuf: Commit of a slot not reserved` (the slot's sequence number, O(1))",
			Checked: "DoubleFree",
			Panic:   msgNotReserved, Op: "Commit", Kind: checked.DoubleFree,
			Setup: func(t testing.TB) (func(), func() error) {
				r := mustNew(t, 4, 16)
				s, _ := r.Reserve(bg)
				r.Commit(s, copy(s.Bytes(), "mine"))
				w := newWitness(r)
				return func() { r.Commit(s, 4) }, w.intact("mine")
			},
		},
		{
			Name:    "second `Release` of a slot",
			Release: "panic `memkit/ringbuf: Release of a slot not peeked`",
			Checked: "DoubleFree",
			Panic:   msgNotPeeked, Op: "Release", Kind: checked.DoubleFree,
			Setup: func(t testing.TB) (func(), func() error) {
				r := mustNew(t, 4, 16)
				r.Write([]byte("mine"))
				g, _ := r.Peek()
				r.Release(g)
				w := newWitness(r)
				return func() { r.Release(g) }, w.intact()
			},
		},
		{
			// Issue 13 case 3: the Release used to pass every check, and
			// two later writes overwrote the record the reader held.
			Name:    "`Release` of a `Reserve` slot, committed, while a reader holds its record through `Peek`",
			Release: "panic `memkit/ringbuf: Release of a slot not peeked` (the Slot says which call lent it, O(1))",
			Checked: "StaleHandle",
			Panic:   msgNotPeeked, Op: "Release", Kind: checked.StaleHandle,
			Setup: func(t testing.TB) (func(), func() error) {
				r := mustNew(t, 2, 16)
				s, _ := r.Reserve(bg)
				r.Commit(s, copy(s.Bytes(), "held by a reader"))
				g, _ := r.Peek()
				return func() { r.Release(s) }, func() error {
					// With the slot still lent, the ring has room for one
					// record, not two.
					if err := r.Write([]byte("next")); err != nil {
						return err
					}
					if err := r.Write([]byte("overwrites?")); !errors.Is(err, ringbuf.ErrFull) {
						return fmt.Errorf("second write = %v; want ErrFull", err)
					}
					if string(g.Bytes()) != "held by a reader" {
						return fmt.Errorf("the peeked record reads %q", g.Bytes())
					}
					r.Release(g)
					return witness{r: r, want: "next"}.intact()()
				}
			},
		},
		{
			Name:    "`Commit` of a `Peek` slot",
			Release: "panic `memkit/ringbuf: Commit of a slot not reserved`",
			Checked: "StaleHandle",
			Panic:   msgNotReserved, Op: "Commit", Kind: checked.StaleHandle,
			Setup: func(t testing.TB) (func(), func() error) {
				r := mustNew(t, 4, 16)
				r.Write([]byte("mine"))
				w := newWitness(r)
				g, _ := r.Peek()
				return func() { r.Commit(g, 4) }, func() error {
					r.Release(g)
					return w.intact()()
				}
			},
		},
		{
			Name:    "`Commit` of another ring's slot or of the zero `Slot`",
			Release: "panic `memkit/ringbuf: Commit of a slot not reserved` (the slot's address)",
			Checked: "ForeignFree",
			Panic:   msgNotReserved, Op: "Commit", Kind: checked.ForeignFree,
			Setup: func(t testing.TB) (func(), func() error) {
				r, other := mustNew(t, 4, 16), mustNew(t, 4, 16)
				s, _ := r.Reserve(bg)
				o, _ := other.Reserve(bg)
				return func() { r.Commit(o, 1) }, func() error {
					r.Commit(s, copy(s.Bytes(), "mine"))
					return witness{r: r, want: "mine"}.intact()()
				}
			},
		},
		{
			Name:    "`Commit` of a length outside the slot",
			Release: "panic `memkit/ringbuf: Commit length outside the slot`",
			Checked: "the same",
			Panic:   msgCommitRange,
			Setup: func(t testing.TB) (func(), func() error) {
				r := mustNew(t, 4, 16)
				w := newWitness(r)
				s, _ := r.Reserve(bg)
				return func() { r.Commit(s, 17) }, func() error {
					r.Commit(s, copy(s.Bytes(), "mine"))
					return w.intact("mine")()
				}
			},
		},
		{
			Name:    "`Read` into a buffer shorter than a slot",
			Release: "panic `memkit/ringbuf: Read buffer shorter than a slot`, never a truncation",
			Checked: "the same",
			Panic:   msgShortRead,
			Setup: func(t testing.TB) (func(), func() error) {
				r := mustNew(t, 4, 16)
				w := newWitness(r)
				return func() { r.Read(make([]byte, 15)) }, w.intact()
			},
		},
		{
			Name:    "a record larger than a slot",
			Release: "`ErrTooLarge`, the ring unchanged: never a truncation",
			Checked: "the same",
			Setup: func(t testing.TB) (func(), func() error) {
				r := mustNew(t, 4, 16)
				w := newWitness(r)
				return func() {
					if err := r.Write(make([]byte, 17)); !errors.Is(err, ringbuf.ErrTooLarge) {
						t.Errorf("Write of 17 bytes = %v; want ErrTooLarge", err)
					}
				}, w.intact()
			},
		},
		{
			Name:    "a nil `Context` (`WriteContext`, `ReadContext`, `Reserve`)",
			Release: "panic `memkit/ringbuf: nil Context`",
			Checked: "the same",
			Panic:   msgNilContext,
			Setup: func(t testing.TB) (func(), func() error) {
				r := mustNew(t, 4, 16, ringbuf.WithPolicy(ringbuf.Block))
				w := newWitness(r)
				//lint:ignore SA1012 the mistake under test
				return func() { r.Reserve(nil) }, w.intact()
			},
		},
		{
			Name:    "a write through a slot's bytes after `Commit`",
			Release: "not caught: the reader gets the changed record, the writer's own; no other record changes",
			Checked: "UseAfterFree when the record is read, peeked or dropped (checksum and guard bytes)",
			Op:      "Read", Kind: checked.UseAfterFree,
			Setup: func(t testing.TB) (func(), func() error) {
				r := mustNew(t, 4, 16)
				s, _ := r.Reserve(bg)
				r.Commit(s, copy(s.Bytes(), "mine"))
				w := newWitness(r)
				p := make([]byte, 16)
				return func() {
					s.Bytes()[0] = 'l'
					r.Read(p)
				}, w.intact()
			},
		},
		{
			Name: "a write through a slot's bytes after `Release`",
			Release: "not caught: the slot's next record overwrites the write, or the write changes that record " +
				"if it comes after it",
			Checked: "UseAfterFree when a writer claims the slot (poison), or the record is read (checksum)",
			Op:      "Write", Kind: checked.UseAfterFree,
			Setup: func(t testing.TB) (func(), func() error) {
				r := mustNew(t, 2, 16)
				r.Write([]byte("mine"))
				g, _ := r.Peek()
				stale := unsafe.Slice(unsafe.SliceData(g.Bytes()), 16)
				r.Release(g)
				w := newWitness(r) // the other slot
				// The checked build refuses the write and leaves an empty
				// record in its place, so that readers do not wait for it.
				next := map[bool]string{false: "next", true: ""}[checked.Enabled]
				return func() {
					stale[0] = 'x'
					r.Write([]byte("next")) // claims the slot
				}, w.intact(next)
			},
		},
	}
}

func TestMistakes(t *testing.T) {
	memtest.RunMistakes(t, "ringbuf", ringMistakes())
}
