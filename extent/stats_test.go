package extent_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/memtest"
)

// readerOK checks one snapshot read by another goroutine: consistent gauges,
// and counters that never go back.
func readerOK(s, prev *memkit.Stats) error {
	switch {
	case s.FreeBytes+s.InUseBytes != s.ReservedBytes:
		return fmt.Errorf("FreeBytes %d + InUseBytes %d != ReservedBytes %d", s.FreeBytes, s.InUseBytes, s.ReservedBytes)
	case s.LargestFree > s.FreeBytes:
		return fmt.Errorf("LargestFree %d > FreeBytes %d", s.LargestFree, s.FreeBytes)
	case s.Allocs < prev.Allocs || s.Frees < prev.Frees || s.Grows < prev.Grows || s.BadFrees != 0:
		return fmt.Errorf("counters went back or a bad free appeared: %v after %v", s, prev)
	}
	return nil
}

// TestAllocator_ReadStatsFromAnotherGoroutine publishes an allocator and
// reads its stats from other goroutines, directly and through expvar, while
// its owner makes random Mallocs and Frees checked against a model. Before
// ReadStats only read a published snapshot, it merged the front cache into
// the index from the reader's goroutine: false "double free" panics within
// a few thousand operations, and a data race.
func TestAllocator_ReadStatsFromAnotherGoroutine(t *testing.T) {
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			a := mustNew(t, append(src.opts, extent.WithBlockSize(64<<10))...)
			memtest.ReadWhileChurning(t, "extent_test.readers."+src.name, a, memtest.Churn{
				Alloc:   func(n int) ([]byte, bool) { return a.Malloc(n), true },
				Free:    a.Free,
				MaxLive: 300,
				MaxSize: 2000,
			}, readerOK)
		})
	}
}

// TestShared_ReadStatsWhileOthersAllocate reads a Shared's stats while two
// goroutines allocate and free on it.
func TestShared_ReadStatsWhileOthersAllocate(t *testing.T) {
	sh, err := extent.NewShared(extent.WithBlockSize(64 << 10))
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := memtest.NewModel(g)
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			for i := range 10000 {
				if i%2 == 1 {
					b, err := m.Remove(0)
					if err != nil {
						t.Error(err)
						return
					}
					sh.Free(b)
				} else if _, err := m.Add(sh.Malloc(1 + rng.IntN(2000))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var prev, s memkit.Stats
	go func() { wg.Wait(); stop.Store(true) }()
	for !stop.Load() {
		sh.ReadStats(&s)
		if err := readerOK(&s, &prev); err != nil {
			t.Fatal(err)
		}
		prev = s
	}
	wg.Wait()
	if sh.ReadStats(&s); s.Allocs != 10000 || s.Frees != 10000 || s.InUseBytes != 0 {
		t.Fatalf("stats %v; want 10000 allocs and frees, nothing in use", &s)
	}
}
