package buddy_test

import (
	"errors"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/buddy"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// FuzzAllocator decodes the input into Alloc, Free, double-Free,
// foreign-Free, Coalesce and verify operations, with the misuse table's
// mistakes between them (a second free after the block went to a new
// owner, a write after free), and checks them against a model: after each
// mistake memkit panicked with its message or every other live block
// holds its bytes, and otherwise: no two live blocks overlap, every byte written reads back until
// Free, every double or foreign free panics with its message, an Alloc fails
// only when the model's free bytes cannot hold the block, and the stats
// agree with the model. At the end everything is freed and the whole region
// must be allocatable as one block again.
func FuzzAllocator(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 0, 2, 0, 1, 0, 3, 0, 4, 1, 5})
	f.Add([]byte{3, 0, 255, 255, 0, 0, 16, 1, 1, 1, 2, 0, 6, 0, 0, 10})
	f.Add([]byte{1, 0, 8, 0, 0, 8, 0, 0, 8, 0, 0, 8, 1, 0, 1, 1, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		cfg := ops.Byte()
		minBlock := 8 << (cfg % 4)         // 8 to 64 B
		size := 64 << 10 >> (cfg >> 2 % 4) // 8 to 64 KiB
		var opts []buddy.Option
		if cfg&0x80 != 0 {
			opts = append(opts, buddy.WithOffHeap())
		}
		a := mustNew(t, size, minBlock, opts...)
		defer a.Close()
		m := memtest.NewModel(0)
		var freed [][]byte // blocks freed, for double frees
		var allocs, frees, failures, bad uint64
		var inUse int
		const maxLive = 64
		for ops.More() {
			switch op := ops.Byte() % 8; {
			case op <= 2 && len(m.Live) < maxLive:
				n := ops.Uint16() % (size + size/4)
				if op == 2 {
					n %= 256
				}
				b, err := a.Alloc(n)
				if err != nil {
					if !errors.Is(err, buddy.ErrNoSpace) {
						t.Fatal(err)
					}
					if n <= size && size-inUse >= a.BlockSize(n) && fits(m, a, n) {
						t.Fatalf("Alloc(%d) failed with a free aligned block of %d", n, a.BlockSize(n))
					}
					failures++
					continue
				}
				if len(b) != n || cap(b) != a.BlockSize(n) {
					t.Fatalf("Alloc(%d): len %d cap %d", n, len(b), cap(b))
				}
				if _, err := m.Add(b); err != nil {
					t.Fatal(err)
				}
				allocs++
				inUse += cap(b)
			case (op == 3 || op == 4) && len(m.Live) > 0:
				b, err := m.Remove(int(ops.Byte()) % len(m.Live))
				if err != nil {
					t.Fatal(err)
				}
				a.Free(b)
				frees++
				inUse -= cap(b)
				freed = append(freed, b)
				if len(freed) > 8 {
					freed = freed[1:]
				}
			case op == 5 && len(freed) > 0:
				b := freed[int(ops.Byte())%len(freed)]
				if j := liveAt(m, b); j >= 0 {
					// A second free after the block went to a new owner: a
					// memkit panic (the checked build's quarantine), or the
					// new owner's block is freed under it, which the model
					// then forgets. Every other block must stay intact.
					victim := m.Live[j].Buf
					if v, ok := memtest.PanicValue(func() { a.Free(b) }); ok {
						if !memtest.IsPanicOf("buddy", v) {
							t.Fatalf("second free after reuse: panic %v", v)
						}
						bad++
						continue
					}
					// Unverified: the Free poisoned it in the checked build.
					m.Drop(j)
					frees++
					inUse -= cap(victim)
					if err := m.VerifyAll(); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, kind := "memkit/buddy: double free", checked.DoubleFree
				if covered(m, b) {
					// Inside a live block now: a moved start of that
					// block, as far as the allocator can tell.
					want, kind = "memkit/buddy: foreign memory", checked.MovedFree
				}
				if !memtest.BadFreeOK("buddy", "Free", func() { a.Free(b) }, []string{want}, kind) {
					t.Fatalf("double Free: panic %q; want %q", memtest.PanicOf(func() { a.Free(b) }), want)
				}
				bad++
			case op == 6 && len(m.Live) > 0:
				b := m.Live[int(ops.Byte())%len(m.Live)].Buf
				if cap(b) <= minBlock {
					continue
				}
				if !memtest.BadFreeOK("buddy", "Free", func() { a.Free(b[minBlock:]) }, []string{panicForeign}, checked.MovedFree) {
					t.Fatalf("interior Free: panic %q", memtest.PanicOf(func() { a.Free(b[minBlock:]) }))
				}
				bad++
			case op == 7 && len(freed) > 0 && ops.Byte()%2 == 0:
				// A write after free into a block no live block covers:
				// the checked build reports it at memkit.Leaks while the
				// block is in its quarantine. The byte is put back, so
				// that the poison check of a later Alloc stays quiet.
				b := freed[int(ops.Byte())%len(freed)]
				if covered(m, b) || m.Overlaps(b) {
					continue
				}
				// Alloc(0)'s block is empty but holds minBlock bytes.
				if err := memtest.WriteAfterFree(a, b[:cap(b)]); err != nil {
					t.Fatal(err)
				}
				if err := m.VerifyAll(); err != nil {
					t.Fatal(err)
				}
			case op == 7:
				if err := m.VerifyAll(); err != nil {
					t.Fatal(err)
				}
				a.Coalesce()
			}
		}
		var s memkit.Stats
		a.PublishStats()
		a.ReadStats(&s)
		if s.Allocs != allocs || s.Frees != frees || s.Failures != failures || s.BadFrees != bad ||
			s.LiveObjects != uint64(len(m.Live)) || s.InUseBytes != uint64(inUse) || s.ReservedBytes != uint64(size) {
			t.Fatalf("stats %v\nmodel: allocs %d frees %d failures %d bad %d live %d in use %d",
				&s, allocs, frees, failures, bad, len(m.Live), inUse)
		}
		// (The checked build's quarantine keeps freed blocks off the lists
		// until Coalesce: LargestFree may be 0 with memory free.)
		if s.FreeBytes != uint64(size-inUse) || s.LargestFree > uint64(largestFree(m, a)) ||
			s.FreeBytes > 0 && !checked.Enabled && (s.LargestFree < uint64(minBlock) || s.LargestFree&(s.LargestFree-1) != 0) {
			t.Fatalf("stats %v\nmodel: free %d, largest aligned free block %d", &s, size-inUse, largestFree(m, a))
		}
		// Once every free pair is merged, the largest free block is the
		// largest aligned block the model has free.
		a.Coalesce()
		a.PublishStats()
		a.ReadStats(&s)
		if s.LargestFree != uint64(largestFree(m, a)) || s.FreeBytes != uint64(size-inUse) {
			t.Fatalf("after Coalesce: stats %v\nmodel: free %d, largest aligned free block %d", &s, size-inUse, largestFree(m, a))
		}
		if err := memtest.CheckDisjoint(m); err != nil {
			t.Fatal(err)
		}
		for len(m.Live) > 0 {
			b, err := m.Remove(0)
			if err != nil {
				t.Fatal(err)
			}
			a.Free(b)
		}
		b, err := a.Alloc(size)
		if err != nil {
			t.Fatal("whole region after freeing everything:", err)
		}
		a.Free(b)
	})
}

// fits reports whether some block of BlockSize(n), aligned to its size in
// the region, overlaps no live block: an Alloc(n) must then succeed.
func fits(m *memtest.Model, a *buddy.Allocator, n int) bool {
	bs := a.BlockSize(n)
	if len(m.Live) == 0 {
		return true
	}
	// Find the region's base from any live block: blocks are aligned to
	// their size relative to it, and the region is aligned to MinBlock at
	// least; scan the candidate offsets.
	base := regionBase(a)
	for off := 0; off+bs <= a.Size(); off += bs {
		lo, hi := base+uintptr(off), base+uintptr(off+bs)
		free := true
		for _, blk := range m.Live {
			p := memtest.Addr(blk.Buf)
			if p < hi && lo < p+uintptr(cap(blk.Buf)) {
				free = false
				break
			}
		}
		if free {
			return true
		}
	}
	return false
}

// largestFree returns the size of the largest block, aligned to its size
// in the region, that overlaps no live block, or 0.
func largestFree(m *memtest.Model, a *buddy.Allocator) int {
	for bs := a.Size(); bs >= a.MinBlock(); bs /= 2 {
		if fits(m, a, bs) {
			return bs
		}
	}
	return 0
}

// regionBase finds the region's start: Alloc of the whole region is not
// possible while blocks are live, so it is recorded by the export hook.
func regionBase(a *buddy.Allocator) uintptr { return a.Base() }

// liveAt returns the index of the live block that starts where b does, or
// -1.
func liveAt(m *memtest.Model, b []byte) int {
	for i, blk := range m.Live {
		if memtest.Addr(blk.Buf) == memtest.Addr(b) {
			return i
		}
	}
	return -1
}

// covered reports whether b's start lies inside a live block.
func covered(m *memtest.Model, b []byte) bool {
	p := memtest.Addr(b)
	for _, blk := range m.Live {
		q := memtest.Addr(blk.Buf)
		if q <= p && p < q+uintptr(cap(blk.Buf)) {
			return true
		}
	}
	return false
}
