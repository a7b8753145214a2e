package buddy_test

import (
	"expvar"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
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
	const name = "buddy_test.readers"
	memkit.Publish(name, a)
	defer memkit.Unpublish(name)
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var prev, s memkit.Stats
			for !stop.Load() {
				if r == 1 {
					_ = expvar.Get(name).String() // as /debug/vars reads it
				}
				a.ReadStats(&s)
				var err error
				switch {
				case s.FreeBytes+s.InUseBytes != s.ReservedBytes || s.ReservedBytes != 1<<20:
					err = fmt.Errorf("bytes do not add up: %v", &s)
				case s.LiveObjects != s.Allocs-s.Frees || s.Allocs < s.Frees:
					err = fmt.Errorf("more frees than allocs: %v", &s)
				case s.Allocs < prev.Allocs || s.Frees < prev.Frees:
					err = fmt.Errorf("counters went back: %v after %v", &s, &prev)
				}
				if err != nil {
					errs <- err
					return
				}
				prev = s
			}
		}()
	}
	m := memtest.NewModel(0)
	rng := rand.New(rand.NewPCG(1, 2))
	live := 0
	for i := range 40000 {
		if live > 0 && (rng.IntN(2) == 0 || live > 200) {
			b, err := m.Remove(rng.IntN(live))
			if err != nil {
				t.Fatal(err)
			}
			a.Free(b)
			live--
		} else if b, err := a.Alloc(1 + rng.IntN(4000)); err == nil {
			if _, err := m.Add(b); err != nil {
				t.Fatal(err)
			}
			live++
		}
		if i%1000 == 0 {
			if err := m.VerifyAll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	// Once the owner publishes, a reader sees its exact figures.
	a.PublishStats()
	var s memkit.Stats
	done := make(chan struct{})
	go func() { a.ReadStats(&s); close(done) }()
	<-done
	if s.LiveObjects != uint64(live) {
		t.Fatalf("published %v; want %d live", &s, live)
	}
}
