package bytepool_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/internal/sysmem"
)

// The misuse table of package bytepool: each mistake a user can make with a
// pool, what each build does about it, and a test that makes it beside
// other live buffers that must come through intact. memtest.RunMistakes
// runs it in the build in use (go test, go test -tags memkitdebug) and
// keeps docs/safety.md's misuse table equal to it. Each mistake is
// described here once; a row's Setup also checks what its columns do not
// hold: the release build's counters and documented hazards, the checked
// build's stacks, address and detail. The tests after the table make the
// same mistakes through every policy and through a Cache, in both builds.
//
// A bytepool buffer has no handle apart from the slice itself, so there is
// no stale-handle mistake to make: a stale slice put back is a double
// free, written to is a write after free.

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

// report is what a row's checked-build report must show besides the kind
// and op RunMistakes checks.
type report struct {
	stacks bool    // allocated by the table's Setup (else: no allocation stack, the memory is foreign)
	freed  bool    // and first put back by it
	addr   uintptr // the address reported
	detail string  // a part of the detail
}

// reported wraps a row's mistake so that, in the checked build, the report
// it panics with is checked against want, its stacks naming the table's
// Setup (see memtest.Reported).
func reported(t testing.TB, want report, mistake func()) func() {
	return memtest.Reported(mistake, func(m *checked.Misuse) {
		checkReport(t, m, m.Op, m.Kind, "bytepoolMistakes", want)
	})
}

// checkReport fails t unless m reports kind from op and shows want, its
// stacks naming fn, a function of the package's tests.
func checkReport(t testing.TB, m *checked.Misuse, op, kind, fn string, want report) {
	t.Helper()
	if !want.stacks {
		fn = ""
	}
	memtest.CheckMisuse(t, m, "bytepool", op, kind, fn, want.freed)
	if !want.stacks && !m.Alloc.Empty() {
		t.Errorf("a report of memory bytepool never handed out names an allocation:\n%v", m)
	}
	if m.Addr != want.addr {
		t.Errorf("report at %#x; want %#x\n%v", m.Addr, want.addr, m)
	}
	if !strings.Contains(m.Detail, want.detail) {
		t.Errorf("report's detail %q; want it to contain %q", m.Detail, want.detail)
	}
}

// bytepoolMistakes is bytepool's misuse table: every mistake the safety
// table lists for bytepool, made as a user would make it. The rows use the
// default Elastic pool unless they say otherwise.
func bytepoolMistakes() []memtest.Mistake {
	return []memtest.Mistake{
		{
			Name:    "double Put",
			Release: "panic `" + panicDoubleFree + "` while the buffer is idle (a mark in its first 8 bytes, O(1))",
			Checked: "DoubleFree", Panic: panicDoubleFree, Op: "Put", Kind: checked.DoubleFree,
			Setup: func(t testing.TB) (func(), func() error) {
				p := mustNew(t)
				intact := bystanders(p, 6, 0)
				b := p.Get(100)
				p.Put(b)
				return reported(t, report{stacks: true, freed: true, addr: addr(b)}, func() { p.Put(b) }), func() error {
					if err := intact(); err != nil {
						return err
					}
					// The mistake changed nothing: the buffer is handed out once.
					if x, y := p.Get(100), p.Get(100); addr(x) == addr(y) {
						return errors.New("one buffer handed out twice after a double Put")
					}
					return nil
				}
			},
		},
		{
			Name:    "second Put after the buffer went to a new owner",
			Release: "not caught: the buffer goes back on a free list while the new owner uses it (Elastic: its first 8 bytes take the idle mark)",
			Checked: "DoubleFree at that Put (the first Put's buffer waits in a quarantine, so it has no new owner yet)",
			Op:      "Put", Kind: checked.DoubleFree,
			Setup: func(t testing.TB) (func(), func() error) {
				if !checked.Enabled {
					elasticSecondPutAfterReuse(t)
				}
				// A Bounded pool reuses the buffer just put back, in
				// every build but the checked one.
				p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded))
				intact := bystanders(p, 6, 0)
				b := p.Get(100)
				p.Put(b)
				owner := p.Get(100)
				if !checked.Enabled && addr(owner) != addr(b) {
					t.Fatal("documented behaviour changed: a Bounded pool did not hand out the buffer just put back")
				}
				memtest.Fill(owner, 99)
				return reported(t, report{stacks: true, freed: true, addr: addr(b)}, func() { p.Put(b) }), func() error {
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
				return reported(t, report{addr: addr(foreign)}, func() { p.Put(foreign) }), intact
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
				return reported(t, report{stacks: true, addr: addr(b) + 1, detail: "byte 1"}, func() { p.Put(b[1:]) }), func() error {
					if err := intact(); err != nil {
						return err
					}
					p.Put(b) // the real buffer is still accepted
					return nil
				}
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
				want := report{stacks: true, freed: true, addr: addr(b), detail: "byte 20 of the freed block is 0x78"}
				mistake := reported(t, want, func() {
					b[20] = 'x'
					memtest.PanicWithLeaksError(p)
				})
				return mistake, func() error {
					if err := intact(); err != nil {
						return err
					}
					if checked.Enabled {
						b[20] = checked.PoisonByte // undo, so the quarantine lets it go
						return nil
					}
					if race.Enabled {
						return nil // sync.Pool drops buffers at random under the race detector
					}
					// The next Get hands out the buffer with the write in
					// it, as it shows any previous user's bytes unless the
					// pool zeroes, but for the first 8, where the idle mark
					// was and which Get clears.
					if c := p.Get(100); addr(c) != addr(b) || c[20] != 'x' || [8]byte(c) != [8]byte{} {
						return errors.New("documented behaviour changed: the next Get did not hand out the buffer written after Put")
					}
					return nil
				}
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
				want := report{stacks: true, addr: addr(b), detail: "byte 105 of the 112-byte buffer"}
				return reported(t, want, func() {
					b[:cap(b)][105] = 7 // through a view past the length
					p.Put(b)
				}), intact
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
}

// tib64 is 64 TiB, a size no machine this runs on has the memory for (a
// variable, so that 32-bit platforms compile int(tib64)).
var tib64 = uint64(1) << 46

// TestMistakes runs the misuse table in the build in use: go test and go
// test -tags memkitdebug each check their column.
func TestMistakes(t *testing.T) {
	memtest.RunMistakes(t, "bytepool", bytepoolMistakes())
}

// elasticSecondPutAfterReuse checks the Elastic pool the release cell of
// "second Put after the buffer went to a new owner" names (the row itself
// uses a Bounded pool, which reuses a buffer in every run): the idle mark
// is cleared when a buffer is handed out, so a Put after Get, Get, Put
// again is no double Put; a second Put after the pool handed the buffer
// to a new owner, whose writes cleared the mark, is not caught, and a
// later Get shares the owner's buffer.
func elasticSecondPutAfterReuse(t testing.TB) {
	t.Helper()
	if race.Enabled {
		return // sync.Pool drops buffers at random under the race detector
	}
	p := mustNew(t)
	c := p.NewCache()
	b := c.Get(1000)
	c.Put(b)
	b = p.Get(1000)
	p.Put(b)

	q := mustNew(t)
	late := q.Get(1000)
	q.Put(late)
	owner := q.Get(1000)
	if addr(owner) != addr(late) {
		t.Fatal("LIFO reuse expected")
	}
	q.Put(late)
	if x := q.Get(1000); addr(x) != addr(owner) {
		t.Fatal("documented hazard changed: update the docs")
	}
}

// front is a policy's pool and the way a test gets and puts its buffers:
// through the Pool or through a Cache.
type front struct {
	policy string
	via    string // "pool" or "cache"
	p      *bytepool.Pool
	get    func(int) []byte
	put    func([]byte)
}

// eachFront runs f on a fresh pool of every policy, through the Pool and
// through a Cache.
func eachFront(t *testing.T, f func(t *testing.T, fr front)) {
	for _, pc := range policies {
		for _, via := range []string{"pool", "cache"} {
			t.Run("policy="+pc.name+"/front="+via, func(t *testing.T) {
				p := mustNew(t, pc.opts...)
				fr := front{pc.name, via, p, p.Get, p.Put}
				if via == "cache" {
					c := p.NewCache()
					fr.get, fr.put = c.Get, c.Put
				}
				f(t, fr)
			})
		}
	}
}

// The table makes each mistake with one pool; this test makes the Put
// mistakes through every policy and through a Cache, in both builds, and
// checks the sizes and shapes a row cannot hold.
func TestMistakes_EveryFront(t *testing.T) {
	const test = "TestMistakes_EveryFront"
	t.Run("double Put", func(t *testing.T) {
		eachFront(t, func(t *testing.T, fr front) {
			// The release build sees a second Put only of a buffer it
			// keeps (not of one past MaxSize, which it drops); it also
			// sees one through a Cache of a buffer the Pool handed out.
			for _, n := range []int{0, 100, 1000, 64 << 10, bytepool.DefaultMaxSize + 1} {
				if !checked.Enabled && (n == 0 || n > bytepool.DefaultMaxSize) {
					continue
				}
				puts := []func([]byte){fr.put}
				if !checked.Enabled && fr.via == "pool" {
					puts = append(puts, fr.p.NewCache().Put)
				}
				for _, put := range puts {
					b := fr.get(n)
					put(b)
					if checked.Enabled {
						checkReport(t, misuseOf(func() { put(b) }), "Put", checked.DoubleFree, test, report{stacks: true, freed: true, addr: addr(b)})
					} else {
						memtest.CheckPanic(t, panicDoubleFree, func() { put(b) })
					}
					if x, y := fr.get(n), fr.get(n); addr(x) == addr(y) {
						t.Fatalf("n=%d: one buffer handed out twice after a double Put", n)
					}
				}
			}
		})
	})
	t.Run("Put of memory it never handed out", func(t *testing.T) {
		eachFront(t, func(t *testing.T, fr front) {
			if checked.Enabled {
				for _, n := range []int{128, 100, bytepool.DefaultMaxSize + 1} {
					foreign := make([]byte, n)
					checkReport(t, misuseOf(func() { fr.put(foreign) }), "Put", checked.ForeignFree, test, report{addr: addr(foreign)})
				}
				checkReport(t, misuseOf(func() { fr.put(nil) }), "Put", checked.ForeignFree, test, report{})
				return
			}
			// A capacity that is no class: dropped, counted, never handed out.
			before := readStats(fr.p)
			foreign := make([]byte, 100)
			fr.put(foreign)
			if s := readStats(fr.p); s.BadFrees != before.BadFrees+1 || s.Frees != before.Frees {
				t.Fatalf("BadFrees %d Frees %d; want %d and %d", s.BadFrees, s.Frees, before.BadFrees+1, before.Frees)
			}
			for range 200 {
				if addr(fr.get(100)) == addr(foreign) {
					t.Fatal("a foreign buffer was filed into a class")
				}
			}
			// With a class's capacity, an Elastic pool cannot tell foreign
			// memory from its own and keeps it: memory-safe, since the
			// caller gave it up. A Bounded pool takes it for a heap
			// fallback and drops it.
			foreign = make([]byte, 128)
			switch fr.policy {
			case "elastic":
				if race.Enabled {
					return // sync.Pool drops buffers at random under the race detector
				}
				fr.put(foreign)
				if addr(fr.get(128)) != addr(foreign) {
					t.Fatal("documented behaviour changed: an Elastic pool did not keep a foreign buffer of a class's capacity")
				}
			case "bounded":
				fr.put(foreign)
				for range 200 {
					if addr(fr.get(128)) == addr(foreign) {
						t.Fatal("a Bounded pool handed out foreign memory")
					}
				}
			}
		})
	})
	t.Run("Put of a re-sliced buffer", func(t *testing.T) {
		eachFront(t, func(t *testing.T, fr front) {
			b := fr.get(4096)
			if checked.Enabled {
				checkReport(t, misuseOf(func() { fr.put(b[1:]) }), "Put", checked.MovedFree, test, report{stacks: true, addr: addr(b) + 1, detail: "byte 1"})
				// b[16:] of a 96-byte buffer has the 80-byte class's
				// capacity: the release build's Elastic pool would file it
				// there.
				c := fr.get(96)
				checkReport(t, misuseOf(func() { fr.put(c[16:]) }), "Put", checked.MovedFree, test, report{stacks: true, addr: addr(c) + 16, detail: "byte 16"})
				// The start stayed, the capacity did not.
				checkReport(t, misuseOf(func() { fr.put(c[:0:64]) }), "Put", checked.MovedFree, test, report{stacks: true, addr: addr(c), detail: "capacity is 64"})
				fr.put(c)
			} else {
				// Capacity no class: dropped and counted. (A Bounded pool
				// also drops a move into another class's capacity:
				// TestBounded_PutMovedStartOfAnotherClassIsBadFree.)
				before := readStats(fr.p)
				fr.put(b[1:])
				if s := readStats(fr.p); s.BadFrees != before.BadFrees+1 || s.Frees != before.Frees {
					t.Fatalf("BadFrees %d Frees %d; want %d and %d", s.BadFrees, s.Frees, before.BadFrees+1, before.Frees)
				}
			}
			fr.put(b) // the real buffer is still accepted
		})
	})
	t.Run("write after Put", func(t *testing.T) {
		// The release build's outcome is the row's: not caught.
		if !checked.Enabled {
			t.Skip("not caught by the release build: see the row")
		}
		eachFront(t, func(t *testing.T, fr front) {
			b := fr.get(100)
			fr.put(b)
			b[5] = 'x' // after Put, while the buffer waits in the quarantine
			_, err := memkit.Leaks(fr.p)
			var m *checked.Misuse
			if !errors.As(err, &m) {
				t.Fatalf("Leaks = %v; want the write after free", err)
			}
			checkReport(t, m, "memkit.Leaks", checked.UseAfterFree, test, report{stacks: true, freed: true, addr: addr(b), detail: "byte 5 of the freed block is 0x78"})
			b[5] = checked.PoisonByte // undo, so the quarantine lets it go
		})
	})
	t.Run("write into the slack", func(t *testing.T) {
		eachFront(t, func(t *testing.T, fr front) {
			neighbour := fr.get(100)
			memtest.Fill(neighbour, 1)
			b := fr.get(100)
			b[:cap(b)][cap(b)-1] = 7 // through a view past the length
			if checked.Enabled {
				checkReport(t, misuseOf(func() { fr.put(b) }), "Put", checked.Overflow, test, report{stacks: true, addr: addr(b), detail: "byte 111 of the 112-byte buffer"})
			} else {
				fr.put(b) // not caught; the write stayed within the buffer
			}
			if err := memtest.Verify(neighbour, 1); err != nil {
				t.Fatal(err)
			}
			// Growing a buffer by append within its capacity is no
			// mistake: it is put back whole.
			c := fr.get(100)
			c = append(c, make([]byte, 12)...)
			if msg := memtest.PanicOf(func() { fr.put(c) }); msg != "" {
				t.Fatalf("Put of a buffer grown within its capacity panicked: %s", msg)
			}
		})
	})
}

// memkit.Leaks lists the buffers a pool has out, with the stack of each
// Get, in the checked build, through the Pool or a Cache, and for the
// default pool; a release build returns memkit.ErrNotChecked.
func TestLeaks(t *testing.T) {
	if !checked.Enabled {
		for _, p := range []*bytepool.Pool{mustNew(t), bytepool.Default()} {
			if _, err := memkit.Leaks(p); !errors.Is(err, memkit.ErrNotChecked) {
				t.Fatalf("Leaks = %v; want ErrNotChecked", err)
			}
		}
		return
	}
	eachFront(t, func(t *testing.T, fr front) {
		kept := fr.get(100)
		fr.put(fr.get(200))
		leaks, err := memkit.Leaks(fr.p)
		if err != nil || len(leaks) != 1 {
			t.Fatalf("Leaks = %v, %v; want one", leaks, err)
		}
		l := leaks[0]
		if l.Allocator != "bytepool" || l.Addr != addr(kept) || l.Size != 100 ||
			!strings.Contains(l.Stack, "bytepool_test.TestLeaks") {
			t.Fatalf("leak %v", l)
		}
		fr.put(kept)
		if leaks, _ := memkit.Leaks(fr.p); len(leaks) != 0 {
			t.Fatalf("Leaks after the Put: %v", leaks)
		}
	})
	b := bytepool.Get(300)
	defer bytepool.Put(b)
	leaks, err := memkit.Leaks(bytepool.Default())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range leaks {
		found = found || l.Addr == addr(b)
	}
	if !found {
		t.Fatalf("the default pool's leaks %v lack the live buffer", leaks)
	}
}
