package slab_test

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/slab"
)

// mchunk is the model of one allocated chunk.
type mchunk struct {
	buf  []byte
	loc  slab.Loc
	refs int     // references the test holds
	in   int     // chunks whose successor this is
	next *mchunk // chain successor
	seq  int     // allocation order: chains only link to later chunks, so they never cycle
}

// arenaModel is the trivially correct model the fuzz target checks the
// arena against.
// arenaAPI is what Arena and Shared have in common.
type arenaAPI interface {
	Alloc(n int) []byte
	TryAlloc(n int) ([]byte, error)
	ClassSize(n int) int
	Owns(buf []byte) bool
	AddRef(buf []byte)
	AddRefN(buf []byte, n int)
	DecRef(buf []byte) bool
	SetNext(buf, next []byte)
	GetNext(buf []byte) []byte
	BufToLoc(buf []byte) slab.Loc
	LocToBuf(l slab.Loc) []byte
	LocAddRef(l slab.Loc)
	LocDecRef(l slab.Loc) bool
	ReadStats(st *memkit.Stats)
}

type arenaModel struct {
	a        arenaAPI
	shared   bool // other goroutines use a too: no global stats checks
	mem      *memtest.Model
	live     []*mchunk
	stale    []slab.Loc // Locs of freed chunks
	freed    [][]byte   // buffers of freed chunks
	seq      int
	sizes    map[*mchunk]int // class size of each live chunk
	allocs   uint64
	frees    uint64
	failures uint64
	badFrees uint64

	// overlap, when set, makes malloc return memory inside the slab of
	// this live buffer: the overlapping-malloc mistake; grown counts the
	// calls of malloc it made.
	overlap []byte
	grown   int
}

// malloc is the arena's memory source: the Go heap, or, for the
// overlapping-malloc mistake, memory a live slab holds.
func (m *arenaModel) malloc(n int) []byte {
	if m.overlap != nil {
		m.grown++
		return unsafe.Slice(unsafe.SliceData(m.overlap), n) // never written: the arena refuses it
	}
	return make([]byte, n)
}

// maxLive bounds the live chunks, so that one input stays cheap.
const maxLive = 48

// FuzzArena decodes the input into Alloc, TryAlloc, AddRef, DecRef,
// LocDecRef, SetNext, GetNext, Loc round trips and misuse on an arena of a
// fuzzed shape, and checks them against a model: no two live chunks
// overlap, every byte written reads back until its chunk is freed,
// reference counts and chains free chunks exactly when the model does,
// stale handles and double frees always panic, and the stats agree.
func FuzzArena(f *testing.F) {
	f.Add([]byte{0, 0, 10, 0, 0, 20, 0, 2, 0, 3, 0, 3, 1})
	f.Add([]byte{0x41, 0, 64, 0, 0, 64, 0, 0, 64, 0, 5, 0, 1, 5, 1, 2, 3, 0, 3, 0, 3, 0, 7, 0, 8, 0})
	f.Add([]byte{0x92, 1, 255, 15, 0, 1, 0, 6, 0, 9, 0, 4, 0, 7, 0, 8, 0, 10, 11, 12})
	f.Add([]byte{0x13, 0, 8, 0, 0, 8, 0, 0, 8, 0, 5, 0, 1, 5, 1, 2, 6, 0, 3, 0, 4, 1, 7, 0, 3, 0, 3, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		cfg := ops.Byte()
		start := 8 + int(cfg&0x0F)*4
		slabSize := 512 << (cfg >> 4 & 3) // 512 B to 4 KiB: many slabs, many releases
		slabSize -= int(ops.Byte() % 8)   // and sizes that are no multiple of 8
		growth := []float64{2, 1.25, 1.5, 3}[cfg>>6]
		m := &arenaModel{mem: memtest.NewModel(0), sizes: map[*mchunk]int{}}
		a, err := slab.NewArena(start, slabSize, growth, m.malloc, slab.WithIdleSlabs(int(cfg&3)))
		if err != nil {
			t.Fatal(err)
		}
		m.a = a
		if err := m.run(ops, slabSize); err != nil {
			t.Fatal(err)
		}
		if err := m.check(); err != nil {
			t.Fatal(err)
		}
		// Drop every reference: the arena must end empty, holding at most
		// the idle slabs it may keep.
		for len(m.live) > 0 {
			c := m.live[0]
			for c.refs == 0 { // held only by a chain: drop its head instead
				for _, p := range m.live {
					if p.next == c {
						c = p
						break
					}
				}
			}
			if err := m.decRef(c, false); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.check(); err != nil {
			t.Fatal(err)
		}
		a.FlushQuarantine() // the checked build's
		var s memkit.Stats
		a.ReadStats(&s)
		if max := uint64(len(s.Classes)*int(cfg&3)) * uint64(slabSize); s.ReservedBytes > max {
			t.Fatalf("empty arena reserves %d bytes; want at most %d", s.ReservedBytes, max)
		}
	})
}

func (m *arenaModel) run(ops *memtest.Ops, slabSize int) error {
	for ops.More() {
		op := ops.Byte()
		if len(m.live) >= maxLive && op%16 < 2 {
			op = 3
		}
		switch op % 16 {
		case 0, 1: // Alloc or TryAlloc, sometimes too large
			n := ops.Uint16() % (slabSize + slabSize/8)
			var b []byte
			if op&0x10 != 0 {
				var err error
				b, err = m.a.TryAlloc(n)
				if (err == nil) != (n <= slabSize) || (err != nil && err != slab.ErrTooLarge) {
					return fmt.Errorf("TryAlloc(%d) error %v", n, err)
				}
			} else {
				b = m.a.Alloc(n)
			}
			if n > slabSize {
				if b != nil {
					return fmt.Errorf("Alloc(%d) above the slab size returned a buffer", n)
				}
				m.failures++
				continue
			}
			if len(b) != n || cap(b) != n {
				return fmt.Errorf("Alloc(%d): len %d cap %d", n, len(b), cap(b))
			}
			if _, err := m.mem.Add(b); err != nil {
				return err
			}
			m.seq++
			c := &mchunk{buf: b, loc: m.a.BufToLoc(b), refs: 1, seq: m.seq}
			m.live = append(m.live, c)
			m.sizes[c] = m.a.ClassSize(n)
			m.allocs++
		case 2: // AddRef, by buffer or Loc, or AddRefN (of a count below 1: refused)
			if c := m.pick(ops, true); c != nil {
				switch {
				case op&0x30 == 0x30:
					n := int(ops.Byte()%5) - 1
					if n < 1 {
						want := fmt.Sprintf("memkit/slab: AddRefN count %d must be at least 1", n)
						if got := panicValue(func() { m.a.AddRefN(c.buf, n) }); got != want {
							return fmt.Errorf("AddRefN(%d): panic %q; want %q", n, got, want)
						}
						n = 0
					} else {
						m.a.AddRefN(c.buf, n)
					}
					c.refs += n
				case op&0x10 != 0:
					m.a.LocAddRef(c.loc)
					c.refs++
				default:
					m.a.AddRef(c.buf)
					c.refs++
				}
			}
		case 3, 4: // DecRef, by buffer or Loc
			if c := m.pick(ops, true); c != nil {
				if err := m.decRef(c, op%16 == 4); err != nil {
					return err
				}
			}
		case 5: // SetNext to a later chunk, or nil
			c := m.pick(ops, true)
			if c == nil {
				continue
			}
			var nx *mchunk
			if k := ops.Byte(); k&1 != 0 {
				for _, d := range m.live {
					if d.seq > c.seq && (nx == nil || int(k)%3 == 0) {
						nx = d
					}
				}
			}
			if nx != nil {
				nx.in++
			}
			old := c.next
			c.next = nx
			if old != nil {
				old.in--
				if err := m.maybeFree(old); err != nil { // before it is freed
					return err
				}
			}
			if nx != nil {
				m.a.SetNext(c.buf, nx.buf)
			} else {
				m.a.SetNext(c.buf, nil)
			}
		case 6: // GetNext
			if c := m.pick(ops, true); c != nil {
				got := m.a.GetNext(c.buf)
				switch {
				case c.next == nil && got != nil:
					return fmt.Errorf("GetNext of a chain end returned %d bytes", len(got))
				case c.next != nil && (addr(got) != addr(c.next.buf) || len(got) != len(c.next.buf)):
					return fmt.Errorf("GetNext returned another buffer than SetNext was given")
				case c.next != nil:
					c.next.refs++
				}
			}
		case 7: // a stale Loc must panic, and change nothing
			if len(m.stale) == 0 {
				continue
			}
			l := m.stale[int(ops.Byte())%len(m.stale)]
			if got := panicValue(func() { m.a.LocToBuf(l) }); !panicIs(got, "memkit/slab: stale handle", checked.StaleHandle) {
				return fmt.Errorf("LocToBuf of a stale Loc: panic %q", got)
			}
			if got := panicValue(func() { m.a.LocDecRef(l) }); !panicIs(got, "memkit/slab: stale handle", checked.StaleHandle) {
				return fmt.Errorf("LocDecRef of a stale Loc: panic %q", got)
			}
			m.badFrees++
		case 8: // Loc round trip of a re-slice: the whole allocation
			if c := m.pick(ops, false); c != nil && len(c.buf) > 0 {
				i := int(ops.Byte()) % len(c.buf)
				sub := c.buf[i:]
				got := m.a.LocToBuf(m.a.BufToLoc(sub))
				if addr(got) != addr(c.buf) || len(got) != len(c.buf) || cap(got) != cap(c.buf) {
					return fmt.Errorf("Loc round trip of buf[%d:] is not the allocation", i)
				}
				if !m.a.Owns(sub) {
					return fmt.Errorf("Owns(buf[%d:]) = false", i)
				}
			}
		case 9: // foreign buffers are refused; an overlapping malloc too
			if c := m.pick(ops, false); op&0x10 != 0 && c != nil {
				if err := m.overlappingMalloc(c, slabSize); err != nil {
					return err
				}
				continue
			}
			f := make([]byte, 1+int(ops.Byte()))
			if m.a.Owns(f) {
				return fmt.Errorf("Owns a heap buffer")
			}
			if got := panicValue(func() { m.a.DecRef(f) }); !panicIs(got, "memkit/slab: buffer not allocated by this arena", checked.ForeignFree) {
				return fmt.Errorf("DecRef of a heap buffer: panic %q", got)
			}
			m.badFrees++
		case 10:
			if err := m.check(); err != nil {
				return err
			}
		case 11: // a DecRef through the buffer of a freed chunk not handed out again panics
			f := m.freedUnused(ops)
			if f == nil {
				continue
			}
			if got := panicValue(func() { m.a.DecRef(f) }); !panicIs(got, "memkit/slab: DecRef of a free chunk", checked.DoubleFree) &&
				!panicIs(got, "memkit/slab: buffer not allocated by this arena", checked.DoubleFree) { // its slab may be released
				return fmt.Errorf("DecRef of a freed chunk: panic %q", got)
			}
			m.badFrees++
		case 12, 13, 14, 15: // the misuse table's other mistakes
			if err := m.mistake(ops, op%16); err != nil {
				return err
			}
			// Panicked with memkit's message or not, every live chunk
			// still holds its bytes.
			if err := m.mem.VerifyAll(); err != nil {
				return fmt.Errorf("after mistake %d: %w", op%16, err)
			}
		}
	}
	return nil
}

// overlappingMalloc makes malloc return memory of c's slab while the
// arena grows for a chunk of the largest class: the arena must panic
// before it uses the memory, and leave every live chunk alone.
func (m *arenaModel) overlappingMalloc(c *mchunk, slabSize int) error {
	m.overlap, m.grown = c.buf[:0], 0
	var b []byte
	got := panicValue(func() { b = m.a.Alloc(slabSize) })
	m.overlap = nil
	switch {
	case m.grown == 0 && got == "": // an idle slab served it
		m.allocs++
		m.frees++
		m.a.DecRef(b)
	case m.grown == 0 || got != panicOverlap:
		return fmt.Errorf("Alloc from an overlapping malloc: panic %q after %d mallocs", got, m.grown)
	default:
		m.failures++
	}
	return m.mem.VerifyAll()
}

// mistake makes one of the misuse table's mistakes (misuse_test.go)
// between the correct calls, and checks that the build in use reports it
// as the table says, or, where it says the mistake goes unnoticed, that it
// changed nothing the model can see.
func (m *arenaModel) mistake(ops *memtest.Ops, kind byte) error {
	switch kind {
	case 12: // DecRef too many of a chunk only chains hold
		k := int(ops.Byte())
		for j := range m.live {
			c := m.live[(k+j)%len(m.live)]
			if c.refs > 0 || c.in == 0 {
				continue
			}
			call := func() { m.a.DecRef(c.buf) }
			if k&1 != 0 {
				call = func() { m.a.LocDecRef(c.loc) }
			}
			got := panicValue(call)
			if !panicIs(got, panicChainedOnly, checked.DoubleFree) {
				return fmt.Errorf("DecRef of a chunk only chains hold: panic %q", got)
			}
			m.badFrees++
			return nil
		}
	case 13: // AddRef, SetNext or GetNext of a freed chunk not handed out again
		f := m.freedUnused(ops)
		if f == nil {
			return nil
		}
		calls := []struct {
			call      func()
			msg, kind string
		}{
			{func() { m.a.AddRef(f) }, panicAddRefFree, checked.StaleHandle},
			{func() { m.a.AddRefN(f, 2) }, panicAddRefNFree, checked.StaleHandle},
			{func() { m.a.SetNext(f, nil) }, panicFreeChunk, checked.StaleHandle},
			{func() { m.a.GetNext(f) }, panicFreeChunk, checked.StaleHandle},
		}
		c := calls[int(ops.Byte())%len(calls)]
		if got := panicValue(c.call); !panicIs(got, c.msg, c.kind) && got != panicForeign { // its slab may be released
			return fmt.Errorf("use of a freed chunk: panic %q; want %q", got, c.msg)
		}
	case 14: // write after free into a chunk not handed out again
		f := m.freedUnused(ops)
		if len(f) == 0 {
			return nil
		}
		i := int(ops.Byte()) % len(f)
		f[i] ^= 0x5a
		_, err := memkit.Leaks(m.a)
		f[i] ^= 0x5a // the chunk may have left the quarantine: put it back as it was
		if mu, ok := err.(*memkit.Misuse); ok && (mu.Kind != checked.UseAfterFree || mu.Addr > addr(f)) {
			return fmt.Errorf("write after free reported as %v", mu)
		} else if !ok && err != nil && err != memkit.ErrNotChecked {
			return fmt.Errorf("Leaks after a write after free: %v", err)
		}
	case 15: // write into the slack of a chunk, then its last DecRef
		k := int(ops.Byte())
		for j := range m.live {
			c := m.live[(k+j)%len(m.live)]
			if c.refs != 1 || c.in != 0 || c.next != nil || m.sizes[c] <= len(c.buf) {
				continue
			}
			unsafe.Slice(unsafe.SliceData(c.buf[:cap(c.buf)]), m.sizes[c])[len(c.buf)] ^= 0x5a
			c.refs--
			if err := m.maybeFree(c); err != nil {
				return err
			}
			got := panicValue(func() { m.a.DecRef(c.buf) })
			if checked.Enabled && !panicIs(got, "", checked.Overflow) || !checked.Enabled && got != "" {
				return fmt.Errorf("last DecRef after a write into the slack: panic %q", got)
			}
			return nil
		}
	}
	return nil
}

// freedUnused returns the buffer of a freed chunk, chosen by the next
// byte, that no live chunk holds, or nil; never for a Shared, whose other
// goroutines may hold it.
func (m *arenaModel) freedUnused(ops *memtest.Ops) []byte {
	if len(m.freed) == 0 || m.shared {
		return nil
	}
	f := m.freed[int(ops.Byte())%len(m.freed)]
	for _, c := range m.live {
		if p := addr(f); p >= addr(c.buf) && p < addr(c.buf)+uintptr(m.sizes[c]) {
			return nil
		}
	}
	return f
}

// pick returns a live chunk chosen by the next byte; with held, only one
// the test holds a reference to.
func (m *arenaModel) pick(ops *memtest.Ops, held bool) *mchunk {
	if len(m.live) == 0 {
		return nil
	}
	k := int(ops.Byte())
	for j := range m.live {
		c := m.live[(k+j)%len(m.live)]
		if !held || c.refs > 0 {
			return c
		}
	}
	return nil
}

// decRef drops one of the test's references to c and checks what the
// arena reports.
func (m *arenaModel) decRef(c *mchunk, byLoc bool) error {
	c.refs--
	want := c.refs+c.in == 0
	// Verify what will be freed first: once freed, a chunk may be handed
	// to another goroutine at once.
	if err := m.maybeFree(c); err != nil {
		return err
	}
	var got bool
	if byLoc {
		got = m.a.LocDecRef(c.loc)
	} else {
		got = m.a.DecRef(c.buf)
	}
	if got != want {
		return fmt.Errorf("DecRef = %v; the model says %v (refs %d, in %d)", got, want, c.refs, c.in)
	}
	if want && !byLoc && !m.shared { // shared: another goroutine may hold the chunk already
		if p := panicValue(func() { m.a.DecRef(c.buf) }); !panicIs(p, "memkit/slab: DecRef of a free chunk", checked.DoubleFree) &&
			!panicIs(p, "memkit/slab: buffer not allocated by this arena", checked.DoubleFree) { // its slab may be released
			return fmt.Errorf("second DecRef: panic %q", p)
		}
		m.badFrees++
	}
	return nil
}

// maybeFree frees c, and then its chain, while nothing references them.
func (m *arenaModel) maybeFree(c *mchunk) error {
	for c != nil && c.refs+c.in == 0 {
		idx := -1
		for i, b := range m.mem.Live {
			if unsafe.SliceData(b.Buf) == unsafe.SliceData(c.buf) && cap(b.Buf) == cap(c.buf) {
				idx = i
			}
		}
		if _, err := m.mem.Remove(idx); err != nil {
			return err
		}
		for i, d := range m.live {
			if d == c {
				m.live[i] = m.live[len(m.live)-1]
				m.live = m.live[:len(m.live)-1]
				break
			}
		}
		delete(m.sizes, c)
		if len(m.stale) < 16 {
			m.stale = append(m.stale, c.loc)
			m.freed = append(m.freed, c.buf)
		} else {
			m.stale[m.frees%16] = c.loc
			m.freed[m.frees%16] = c.buf
		}
		m.frees++
		next := c.next
		c.next = nil
		if next != nil {
			next.in--
		}
		c = next
	}
	return nil
}

// check verifies every live chunk and the stats.
func (m *arenaModel) check() error {
	if err := m.mem.VerifyAll(); err != nil {
		return err
	}
	if err := memtest.CheckDisjoint(m.mem); err != nil {
		return err
	}
	var inUse uint64
	for _, c := range m.live {
		inUse += uint64(m.sizes[c])
		if !m.a.Owns(c.buf) {
			return fmt.Errorf("Owns(live chunk) = false")
		}
		if got := m.a.LocToBuf(c.loc); addr(got) != addr(c.buf) || len(got) != len(c.buf) {
			return fmt.Errorf("LocToBuf of a live chunk's Loc changed the slice")
		}
	}
	if m.shared {
		return nil
	}
	var s memkit.Stats
	m.a.ReadStats(&s)
	// ReadStats may lag the hot paths by less than PubEvery Allocs and
	// DecRefs per class; once the owner publishes, it is exact.
	lag := uint64(slab.PubEvery * len(s.Classes))
	if s.Allocs > m.allocs || m.allocs-s.Allocs >= lag || s.Frees > m.frees || m.frees-s.Frees >= lag {
		return fmt.Errorf("published stats %v\nmodel: allocs %d frees %d", &s, m.allocs, m.frees)
	}
	slab.PublishStats(m.a)
	m.a.ReadStats(&s)
	if s.Allocs != m.allocs || s.Frees != m.frees || s.LiveObjects != uint64(len(m.live)) ||
		s.InUseBytes != inUse || s.Failures != m.failures || s.BadFrees != m.badFrees || s.ReservedBytes < s.InUseBytes {
		return fmt.Errorf("stats %v\nmodel: allocs %d frees %d live %d in use %d failures %d bad frees %d",
			&s, m.allocs, m.frees, len(m.live), inUse, m.failures, m.badFrees)
	}
	var rows memkit.ClassStats
	for _, r := range s.Classes {
		rows.LiveObjects += r.LiveObjects
		rows.ReservedBytes += r.ReservedBytes
	}
	if rows.LiveObjects != s.LiveObjects || rows.ReservedBytes != s.ReservedBytes {
		return fmt.Errorf("class rows disagree with the totals: %v", &s)
	}
	return nil
}

// panicValue runs f and returns what it panicked with, as a string, or "".
// A *checked.Misuse, the checked build's report, is formatted as
// "misuse: " and its kind.
func panicValue(f func()) string {
	v, panicked := memtest.PanicValue(f)
	if m, ok := v.(*checked.Misuse); ok {
		return "misuse: " + m.Kind
	}
	if !panicked {
		return ""
	}
	return fmt.Sprint(v)
}
