package buddy_test

import (
	"fmt"
	"testing"

	"github.com/memkit/memkit"
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
