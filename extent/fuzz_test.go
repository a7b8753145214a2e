package extent_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// FuzzAllocator decodes the input into Malloc, TryMalloc, Free, partial
// Free, FreeRest, Borrow, Recycle, Trim, double-Free and foreign-Free
// operations, with the misuse table's mistakes between them (a second Free
// after the range went to a new owner, a write after free), and checks
// them against a model: after each mistake memkit panicked with its
// message or every other live allocation holds its bytes, and otherwise: no two live ranges (or
// borrowed ranges) overlap, every byte written reads back until freed or
// recycled, a Free of a range with any free byte panics with "double free"
// and one outside every block with "foreign memory", the free bytes in the
// stats equal the reserved bytes less what the model holds, the index keeps
// its invariants, and once everything is freed each block is one free range.
// addMalloc checks that b, what a Malloc or TryMalloc of n bytes returned,
// has exactly n bytes, and adds it to the model m of live allocations unless
// it is empty; it reports whether it added b.
func addMalloc(t *testing.T, m *memtest.Model, b []byte, n int) bool {
	t.Helper()
	if len(b) != n || cap(b) != n {
		t.Fatalf("Malloc(%d): len %d cap %d", n, len(b), cap(b))
	}
	if n == 0 {
		return false
	}
	if _, err := m.Add(b); err != nil {
		t.Fatal(err)
	}
	return true
}

func FuzzAllocator(f *testing.F) {
	f.Add([]byte{0, 0, 100, 0, 0, 50, 0, 3, 0, 4, 1, 30, 5, 0, 9, 10})
	f.Add([]byte{1, 0, 255, 15, 0, 255, 15, 2, 0, 3, 1, 3, 0, 8, 6, 0, 7, 9, 0, 11})
	f.Add([]byte{2, 5, 0, 5, 200, 1, 5, 40, 0, 6, 6, 4, 0, 9, 9, 7, 8, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		cfg := ops.Byte()
		opts := []extent.Option{extent.WithBlockSize(4096 << (cfg % 3)), extent.WithBorrowChunk(1024)}
		if cfg&4 != 0 {
			opts = append(opts, extent.WithBudget(16<<10))
		}
		if cfg&8 != 0 {
			opts = append(opts, extent.WithGrowth(2))
		}
		if cfg&16 != 0 {
			opts = append(opts, extent.WithOffHeap())
		}
		a := mustNew(t, opts...)
		defer a.Close()
		m := memtest.NewModel(0)  // live allocations
		bm := memtest.NewModel(1) // live borrows
		var allocs, frees, bad, fails uint64
		const maxLive = 64
		var freed [][]byte // recently freed ranges, for double frees
		size := func() int {
			n := ops.Uint16()
			if n%16 == 15 && len(freed) > 0 {
				// The size of the last Free: the front cache's case.
				return len(freed[len(freed)-1])
			}
			if n&1 == 0 {
				return n % 600
			}
			return n % 20000
		}
		remember := func(b []byte) {
			freed = append(freed, b)
			if len(freed) > 8 {
				freed = freed[1:]
			}
		}
		prevOp := byte(255)
		for ops.More() {
			op := ops.Byte() % 13
			if len(m.Live) >= maxLive && op <= 1 {
				op = 2
			}
			if debugOps {
				if msg := a.CheckTree(); msg != "" {
					t.Fatalf("before op %d, after op %d: %s", op, prevOp, msg)
				}
			}
			prevOp = op
			switch op {
			case 0: // Malloc
				n := size()
				if addMalloc(t, m, a.Malloc(n), n) {
					allocs++
				}
			case 1: // TryMalloc
				n := size()
				b, err := a.TryMalloc(n)
				if err != nil {
					if !errors.Is(err, extent.ErrBudget) {
						t.Fatal(err)
					}
					fails++
					continue
				}
				if addMalloc(t, m, b, n) {
					allocs++
				}
			case 2, 3: // Free a whole allocation
				b := pick(t, ops, m)
				if b == nil {
					continue
				}
				a.Free(b)
				frees++
				remember(b)
			case 4: // Free a part; the pieces either side stay live
				b := pick(t, ops, m)
				if b == nil {
					continue
				}
				i := int(ops.Byte()) % len(b)
				j := i + 1 + int(ops.Byte())%(len(b)-i)
				a.Free(b[i:j])
				frees++
				remember(b[i:j])
				for _, p := range [][]byte{b[:i:i], b[j:]} {
					if len(p) > 0 {
						if _, err := m.Add(p); err != nil {
							t.Fatal(err)
						}
					}
				}
			case 5: // FreeRest
				b := pick(t, ops, m)
				if b == nil {
					continue
				}
				keep := int(ops.Byte()) % (len(b) + 1)
				k := a.FreeRest(b, keep)
				if len(k) != keep || cap(k) != keep {
					t.Fatalf("FreeRest(%d, %d): len %d cap %d", len(b), keep, len(k), cap(k))
				}
				if keep < len(b) {
					frees++ // FreeRest of nothing is no Free
					remember(b[keep:])
				}
				if keep > 0 {
					if _, err := m.Add(k); err != nil {
						t.Fatal(err)
					}
				}
			case 6: // Borrow
				n := int(ops.Byte()) * 9
				b := a.Borrow(n)
				if len(b) != n || cap(b) != n {
					t.Fatalf("Borrow(%d): len %d cap %d", n, len(b), cap(b))
				}
				if _, err := bm.Add(b); err != nil {
					t.Fatal(err)
				}
			case 7: // Recycle
				if err := bm.VerifyAll(); err != nil {
					t.Fatal(err)
				}
				bm.Live = bm.Live[:0]
				a.Recycle()
			case 8:
				a.Trim()
			case 9: // double free: a range freed before, now wholly free again?
				if len(freed) == 0 {
					continue
				}
				b := freed[int(ops.Byte())%len(freed)]
				b = b[:len(b):len(b)] // the bytes Free would free, for Overlap
				if overlapsChunk(a, b) {
					continue // Borrow's now: a Free of Borrow memory
				}
				if m.Overlaps(b) {
					// A second Free after (part of) the range went to a new
					// owner: a memkit panic, or the new owners' bytes are
					// freed under them, which the model then forgets.
					// Every other allocation must stay intact.
					if v, ok := memtest.PanicValue(func() { a.Free(b) }); ok {
						if !memtest.IsPanicOf("extent", v) {
							t.Fatalf("second Free after reuse: panic %v", v)
						}
						bad++
						continue
					}
					frees++
					forget(t, m, b)
					if err := m.VerifyAll(); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if free := func() { a.Free(b) }; !memtest.BadFreeOK("extent", "Free", free, []string{panicDoubleFree, panicForeign}, checked.DoubleFree, checked.ForeignFree) {
					t.Fatalf("double Free: panic %q", memtest.PanicOf(free))
				}
				bad++
			case 10: // foreign memory
				free := func() { a.Free(make([]byte, 1+int(ops.Byte()))) }
				if checked.Enabled {
					if m, _ := memtest.MisuseOf(free); m == nil || m.Kind != checked.ForeignFree {
						t.Fatalf("foreign Free: misuse %v", m)
					}
				} else if got := memtest.PanicOf(free); got != "memkit/extent: foreign memory" {
					t.Fatalf("foreign Free: panic %q", got)
				}
				bad++
			case 11:
				if err := m.VerifyAll(); err != nil {
					t.Fatal(err)
				}
				if msg := a.CheckTree(); msg != "" {
					t.Fatal("free-range index:", msg)
				}
			case 12: // write after free, into bytes no one holds now
				if len(freed) == 0 {
					continue
				}
				b := freed[int(ops.Byte())%len(freed)]
				b = b[:len(b):len(b)]
				if overlapsHeld(a, m, b) || !inBlock(a, b) {
					continue // someone's memory, or unmapped (a fault)
				}
				// The checked build reports it at memkit.Leaks while the
				// range is in its quarantine. The byte is put back, so
				// that the poison check of a later Malloc stays quiet.
				if err := memtest.WriteAfterFree(a, b); err != nil {
					t.Fatal(err)
				}
				if err := m.VerifyAll(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := memtest.CheckDisjoint(m, bm); err != nil {
			t.Fatal(err)
		}
		if err := m.VerifyAll(); err != nil {
			t.Fatal(err)
		}
		if msg := a.CheckTree(); msg != "" {
			t.Fatal("free-range index:", msg)
		}
		held := uint64(a.GuardBytes())
		for _, blk := range m.Live {
			held += uint64(len(blk.Buf))
		}
		for _, c := range a.BorrowChunks() {
			held += uint64(len(c))
		}
		var s memkit.Stats
		a.PublishStats()
		a.ReadStats(&s)
		if s.InUseBytes != held || s.FreeBytes != s.ReservedBytes-held || s.Allocs != allocs ||
			s.Frees != frees || s.BadFrees != bad || s.Failures != fails {
			t.Fatalf("stats %v\nmodel: held %d allocs %d frees %d bad %d failures %d",
				&s, held, allocs, frees, bad, fails)
		}
		if err := checkLargestFree(a, m, &s); err != nil {
			t.Fatal(err)
		}
		// Free everything: each block must be one free range again.
		for len(m.Live) > 0 {
			b, err := m.Remove(0)
			if err != nil {
				t.Fatal(err)
			}
			a.Free(b)
		}
		a.Recycle()
		a.Trim()
		a.Trim()
		a.PublishStats()
		a.ReadStats(&s)
		chunk := uint64(0)
		if cs := a.BorrowChunks(); len(cs) > 0 {
			chunk = uint64(len(cs[0]))
		}
		if s.InUseBytes != chunk || s.FreeBytes != s.ReservedBytes-chunk {
			t.Fatalf("after freeing everything: %v blocks %d chunks %d", &s, a.Blocks(), len(a.BorrowChunks()))
		}
		if chunk == 0 && (a.FreeRanges() != a.Blocks() || s.ReservedBytes != 0 || s.LargestFree != 0) {
			t.Fatalf("after freeing everything and two Trims: %v, %d ranges, %d blocks", &s, a.FreeRanges(), a.Blocks())
		}
	})
}

// overlapsHeld reports whether b overlaps a live allocation or a Borrow
// chunk: a Free of it would then not be a plain double free.
func overlapsHeld(a *extent.Allocator, m *memtest.Model, b []byte) bool {
	return m.Overlaps(b) || overlapsChunk(a, b)
}

func overlapsChunk(a *extent.Allocator, b []byte) bool {
	for _, c := range a.BorrowChunks() {
		if memtest.Overlap(c, b) {
			return true
		}
	}
	return false
}

// forget drops from m the bytes of b, which a mistaken Free gave back
// under their owners: each live allocation b overlaps is replaced by its
// parts outside b, which stay allocated.
func forget(t *testing.T, m *memtest.Model, b []byte) {
	t.Helper()
	lo, hi := memtest.Addr(b), memtest.Addr(b)+uintptr(len(b))
	for i := 0; i < len(m.Live); {
		v := m.Live[i].Buf
		p := memtest.Addr(v)
		if !memtest.Overlap(v, b) {
			i++
			continue
		}
		m.Drop(i) // unverified: the Free poisoned it in the checked build
		var parts [][]byte
		if lo > p {
			parts = append(parts, v[:lo-p:lo-p])
		}
		if e := p + uintptr(len(v)); hi < e {
			parts = append(parts, v[hi-p:])
		}
		for _, q := range parts {
			if _, err := m.Add(q); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// inBlock reports whether a block of a still holds b.
func inBlock(a *extent.Allocator, b []byte) bool {
	p := memtest.Addr(b)
	for _, blk := range a.BlockBounds() {
		if blk[0] <= p && p+uintptr(len(b)) <= blk[1] {
			return true
		}
	}
	return false
}

// debugOps checks the index before every operation, to find the one that
// broke it.
const debugOps = false

// checkLargestFree checks the free-range gauges of s against the model:
// the free ranges are the gaps the live allocations and Borrow chunks
// leave in the blocks, so FreeBytes is their sum and LargestFree the
// longest (two gaps that touch across a block edge are two ranges). The
// checked build's guard bytes sit at places the model does not know; there
// it checks only that LargestFree is at most FreeBytes and non-zero when
// FreeBytes is.
func checkLargestFree(a *extent.Allocator, m *memtest.Model, s *memkit.Stats) error {
	// (The checked build's quarantine counts as free bytes outside the
	// index: LargestFree may be 0 with bytes free.)
	if s.LargestFree > s.FreeBytes || !checked.Enabled && (s.FreeBytes > 0) != (s.LargestFree > 0) {
		return fmt.Errorf("LargestFree %d, FreeBytes %d", s.LargestFree, s.FreeBytes)
	}
	if checked.Enabled {
		return nil
	}
	var held [][2]uintptr
	add := func(b []byte) {
		if len(b) > 0 {
			p := memtest.Addr(b)
			held = append(held, [2]uintptr{p, p + uintptr(len(b))})
		}
	}
	for _, blk := range m.Live {
		add(blk.Buf)
	}
	for _, c := range a.BorrowChunks() {
		add(c)
	}
	var total, largest uint64
	for _, blk := range a.BlockBounds() {
		// The held ranges in this block, by address.
		var in [][2]uintptr
		for _, h := range held {
			if h[0] >= blk[0] && h[1] <= blk[1] {
				in = append(in, h)
			}
		}
		slices.SortFunc(in, func(x, y [2]uintptr) int { return cmp.Compare(x[0], y[0]) })
		at := blk[0]
		for _, h := range append(in, [2]uintptr{blk[1], blk[1]}) {
			gap := uint64(h[0] - at)
			total += gap
			largest = max(largest, gap)
			at = h[1]
		}
	}
	if total != s.FreeBytes || largest != s.LargestFree {
		return fmt.Errorf("free bytes %d, largest free %d; the model's gaps: %d bytes, largest %d",
			s.FreeBytes, s.LargestFree, total, largest)
	}
	return nil
}
