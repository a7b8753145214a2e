package bytepool_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/sysmem"
)

// panicDoubleFree is the release build's panic for a second Put it sees.
const panicDoubleFree = "memkit/bytepool: double free"

// bystanders gets n live buffers of assorted sizes from p, fills each with
// its own pattern, and returns the check that they all still hold it, and,
// in the release build, that p counted want bad frees: the other
// allocations a mistake must leave alone, and the count it must leave.
func bystanders(p *bytepool.Pool, n int, wantBad uint64) func() error {
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = p.Get(24 + 700*i)
		memtest.Fill(bufs[i], uint64(i+1))
	}
	return func() error {
		for i, b := range bufs {
			if err := memtest.Verify(b, uint64(i+1)); err != nil {
				return fmt.Errorf("bystander %d: %w", i, err)
			}
		}
		if s := readStats(p); !checked.Enabled && s.BadFrees != wantBad {
			return fmt.Errorf("BadFrees = %d; want %d", s.BadFrees, wantBad)
		}
		return nil
	}
}

// mistakes is bytepool's misuse table: every mistake the safety
// table lists for bytepool, made as a user would make it. The rows use the
// default Elastic pool unless they say otherwise.
var mistakes = []memtest.Mistake{
	{
		Name:    "double Put",
		Release: "panic `" + panicDoubleFree + "` while the buffer is idle (a mark in its first 8 bytes, O(1))",
		Checked: "DoubleFree", Panic: panicDoubleFree, Op: "Put", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			p := mustNew(t)
			intact := bystanders(p, 6, 0)
			b := p.Get(100)
			p.Put(b)
			return func() { p.Put(b) }, intact
		},
	},
	{
		Name:    "second Put after the buffer went to a new owner",
		Release: "not caught: the buffer goes back on a free list while the new owner uses it (Elastic: its first 8 bytes take the idle mark)",
		Checked: "DoubleFree at that Put (the first Put's buffer waits in a quarantine, so it has no new owner yet)",
		Op:      "Put", Kind: checked.DoubleFree,
		Setup: func(t testing.TB) (func(), func() error) {
			// A Bounded pool with one shard reuses the buffer just put
			// back, in every build but the checked one.
			p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded))
			intact := bystanders(p, 6, 0)
			b := p.Get(100)
			p.Put(b)
			owner := p.Get(100)
			memtest.Fill(owner, 99)
			return func() { p.Put(b) }, func() error {
				if err := intact(); err != nil {
					return err
				}
				if checked.Enabled { // the release build gave the owner's buffer away
					return memtest.Verify(owner, 99)
				}
				return nil
			}
		},
	},
	{
		Name:    "Put of memory it never handed out",
		Release: "dropped and counted in `BadFrees` if its capacity is no class; otherwise kept (Elastic, unless another memkit allocator owns it: next row) or dropped as a fallback (Bounded)",
		Checked: "ForeignFree", Op: "Put", Kind: checked.ForeignFree,
		Setup: func(t testing.TB) (func(), func() error) {
			p := mustNew(t)
			intact := bystanders(p, 6, 1)
			foreign := make([]byte, 100)
			return func() { p.Put(foreign) }, intact
		},
	},
	{
		Name:    "Put of memory another memkit allocator owns (a FixedPool's or a Bounded pool's buffer, an extent range, offheap memory)",
		Release: "Elastic: panic `memkit/bytepool: Put of memory <owner> owns: return it to <owner> instead` (they register their regions; one compare while none lies below the buffer); Bounded: dropped as a fallback",
		Checked: "ForeignFree", Panic: panicOwned("buffer.FixedPool"), Op: "Put", Kind: checked.ForeignFree,
		Setup: func(t testing.TB) (func(), func() error) {
			fs, err := foreigners()
			if err != nil {
				t.Fatal(err)
			}
			p := mustNew(t)
			intact := bystanders(p, 6, 0)
			f := fs[0] // a FixedPool's buffer; TestElastic_PutOfAnotherAllocatorsMemoryPanics makes the others
			return func() { p.Put(f.buf) }, func() error {
				if err := intact(); err != nil {
					return err
				}
				return memtest.Verify(f.buf, f.seed)
			}
		},
	},
	{
		Name:    "Put of a re-sliced buffer",
		Release: "dropped and counted in `BadFrees` when the capacity is no class or (Elastic) the start breaks the 16-byte alignment of heap buffers, always in Bounded; an Elastic pool files a move by a multiple of 16 into a smaller class",
		Checked: "MovedFree", Op: "Put", Kind: checked.MovedFree,
		Setup: func(t testing.TB) (func(), func() error) {
			p := mustNew(t)
			intact := bystanders(p, 6, 1)
			b := p.Get(4096)
			return func() { p.Put(b[1:]) }, intact
		},
	},
	{
		Name:    "write after Put",
		Release: "not caught (the write lands in the idle buffer, whose capacity is locked to its class)",
		Checked: "UseAfterFree, reported by `memkit.Leaks` or when the buffer leaves the quarantine",
		Op:      "memkit.Leaks", Kind: checked.UseAfterFree,
		Setup: func(t testing.TB) (func(), func() error) {
			p := mustNew(t)
			intact := bystanders(p, 6, 0)
			b := p.Get(100)
			p.Put(b)
			return func() {
				b[20] = 'x'
				memtest.PanicWithLeaksError(p)
			}, intact
		},
	},
	{
		Name:    "write into the slack",
		Release: "not caught (the cap lock keeps writes inside the buffer)",
		Checked: "Overflow at Put",
		Op:      "Put", Kind: checked.Overflow,
		Setup: func(t testing.TB) (func(), func() error) {
			p := mustNew(t)
			intact := bystanders(p, 6, 0)
			b := p.Get(100)
			return func() {
				b[:cap(b)][105] = 7 // through a view past the length
				p.Put(b)
			}, intact
		},
	},
	{
		// Issue 21 case 1.
		Name: "Get of a size the machine cannot serve (a peer's length field)",
		Release: "panic `memkit/bytepool: size … is more than the machine can allocate now …`, asked of the kernel " +
			"before anything is reserved (`TryGet`: false; `WithMaxSize` past 2^47-1: an error from `New`), never the runtime's fatal out-of-memory",
		Checked: "the same",
		Panic:   panicTooLarge(int(tib64)),
		Setup: func(t testing.TB) (func(), func() error) {
			if math.MaxInt < 1<<46 || sysmem.Available(tib64) {
				t.Skip("needs a 64-bit system that refuses to map 64 TiB")
			}
			p := mustNew(t)
			intact := bystanders(p, 6, 0)
			return func() { p.Get(int(tib64)) }, intact
		},
	},
}

// tib64 is 64 TiB, a size no machine this runs on has the memory for (a
// variable, so that 32-bit platforms compile int(tib64)).
var tib64 = uint64(1) << 46

// TestMistakes runs the misuse table in the build in use: go test and go
// test -tags memkitdebug each check their column.
func TestMistakes(t *testing.T) {
	memtest.RunMistakes(t, "bytepool", mistakes)
}
