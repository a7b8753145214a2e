package buddy_test

import (
	"fmt"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/buddy"
	"github.com/memkit/memkit/internal/memtest"
)

// TestAllocator_ReadStatsFromAnotherGoroutine publishes an allocator and
// reads its stats from other goroutines, directly and through expvar, while
// its owner makes random Allocs and Frees checked against a model. Before
// ReadStats read published atomics only, this was a data race on every
// counter (go test -race).
func TestAllocator_ReadStatsFromAnotherGoroutine(t *testing.T) {
	a := mustNew(t, 1<<20, 64)
	memtest.ReadWhileChurning(t, "buddy_test.readers", a, memtest.Churn{
		Alloc: func(n int) ([]byte, bool) {
			b, err := a.Alloc(n)
			return b, err == nil
		},
		Free:    a.Free,
		MaxLive: 200,
		MaxSize: 4000,
	}, func(s, prev *memkit.Stats) error {
		switch {
		case s.FreeBytes+s.InUseBytes != s.ReservedBytes || s.ReservedBytes != 1<<20:
			return fmt.Errorf("bytes do not add up: %v", s)
		case s.LiveObjects != s.Allocs-s.Frees || s.Allocs < s.Frees:
			return fmt.Errorf("more frees than allocs: %v", s)
		case s.Allocs < prev.Allocs || s.Frees < prev.Frees:
			return fmt.Errorf("counters went back: %v after %v", s, prev)
		}
		return nil
	})
}

// possible returns an error if s shows a state no buddy allocator of a
// region of size bytes can be in: more in use than reserved, more reserved
// than the region, a row with more blocks than fit in the region, or live
// objects that are not allocations less frees.
func possible(s *memkit.Stats, size uint64) error {
	switch {
	case s.InUseBytes > s.ReservedBytes || s.ReservedBytes > size:
		return fmt.Errorf("in use %d, reserved %d of a %d-byte region: %v", s.InUseBytes, s.ReservedBytes, size, s)
	case s.FreeBytes+s.InUseBytes != s.ReservedBytes:
		return fmt.Errorf("free %d + in use %d != reserved %d", s.FreeBytes, s.InUseBytes, s.ReservedBytes)
	case s.Allocs < s.Frees || s.LiveObjects != s.Allocs-s.Frees:
		return fmt.Errorf("%d live from %d allocs and %d frees", s.LiveObjects, s.Allocs, s.Frees)
	}
	for _, c := range s.Classes {
		if c.Allocs < c.Frees || c.InUseBytes > c.ReservedBytes || c.ReservedBytes > size || c.LiveObjects != c.Allocs-c.Frees {
			return fmt.Errorf("row of %d-byte blocks: %+v", c.Size, c)
		}
	}
	return nil
}

// A reader on another goroutine never sees an impossible state, whatever
// moment it reads, while the owner allocates and frees blocks of every
// order up to a quarter of the region (a large block freed and its memory
// split into small ones is where rows published at different moments, and
// a row's frees and allocations of different moments, added up to more than
// the region: 5 MiB in use of 1 MiB).
func TestAllocator_ReadStatsNeverImpossible(t *testing.T) {
	const size = 64 << 10
	a := mustNew(t, size, 16)
	memtest.ReadWhileChurning(t, "buddy_test.possible", a, memtest.Churn{
		Alloc: func(n int) ([]byte, bool) {
			b, err := a.Alloc(n)
			return b, err == nil
		},
		Free:    a.Free,
		MaxLive: 64,
		MaxSize: size / 4,
	}, func(s, prev *memkit.Stats) error {
		if err := possible(s, size); err != nil {
			return err
		}
		if s.Allocs < prev.Allocs || s.Frees < prev.Frees {
			return fmt.Errorf("counters went back: %v after %v", s, prev)
		}
		return nil
	})
}

// A closed allocator holds no memory: Close gave the region back, so it
// reports nothing reserved and nothing in use, and counts the blocks still
// live at Close as freed by it.
func TestAllocator_ClosedWithALiveBlockIsConsistent(t *testing.T) {
	forEachSource(t, 4096, 64, func(t *testing.T, a *buddy.Allocator) {
		mustAlloc(t, a, 100)
		mustAlloc(t, a, 64)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		s := readStats(a)
		if err := possible(&s, 4096); err != nil {
			t.Fatal(err)
		}
		if s.InUseBytes != 0 || s.LiveObjects != 0 || s.Allocs != 2 || s.Frees != 2 || s.Releases != 1 {
			t.Fatalf("stats after Close with two live blocks: %v", &s)
		}
	})
}
