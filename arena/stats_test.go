package arena_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
)

// statsBudget is the budget of the scraped arenas: small enough that the
// owner sees fallbacks and failures as well as chunks taken and released.
const statsBudget = 16 << 10

// cycleMax is the most objects the scraped owners hand out between
// Resets.
const cycleMax = 300

// checkScraped fails t unless s, read by a scraper, is within the bounds
// the owner keeps (each field of one moment, no counter wrapped below 0)
// and no counter went back since prev.
func checkScraped(t *testing.T, s, prev *memkit.Stats) bool {
	t.Helper()
	switch {
	case s.ReservedBytes > statsBudget:
		t.Errorf("reserved %d bytes, budget %d", s.ReservedBytes, statsBudget)
	case s.InUseBytes > s.ReservedBytes:
		t.Errorf("%d bytes in use of %d reserved", s.InUseBytes, s.ReservedBytes)
	case s.LiveObjects > cycleMax:
		t.Errorf("%d live objects, at most %d between Resets", s.LiveObjects, cycleMax)
	case s.Allocs != s.Frees+s.LiveObjects+s.HeapFallbacks:
		t.Errorf("%d allocs, %d frees, %d live and %d fallbacks: not of one moment",
			s.Allocs, s.Frees, s.LiveObjects, s.HeapFallbacks)
	case s.Releases > s.Grows:
		t.Errorf("%d releases of %d grows", s.Releases, s.Grows)
	case s.Allocs < prev.Allocs || s.Frees < prev.Frees || s.Grows < prev.Grows ||
		s.Releases < prev.Releases || s.HeapFallbacks < prev.HeapFallbacks || s.Failures < prev.Failures:
		t.Errorf("a counter went back: %+v after %+v", *s, *prev)
	default:
		return true
	}
	return false
}

// scrape runs ReadStats of src in a loop on another goroutine, checking
// each read, until the returned stop is called; stop reports how many
// reads the scraper made.
func scrape(t *testing.T, src memkit.StatsSource) (stop func() int) {
	var done atomic.Bool
	var reads int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var s, prev memkit.Stats
		for !done.Load() {
			src.ReadStats(&s)
			reads++
			if !checkScraped(t, &s, &prev) {
				return
			}
			prev, s = s, prev
		}
	}()
	return func() int {
		done.Store(true)
		wg.Wait()
		return reads
	}
}

// ReadStats of an Arena may run on any goroutine while the owner
// allocates, resets and frees (issue 13 case 4): under -race, the
// detector sees no race, and every read is within the owner's bounds and
// of one moment.
func TestArena_ReadStatsWhileTheOwnerWorks(t *testing.T) {
	a := arena.NewArena(arena.WithBudget(statsBudget), arena.WithChunkSize(1<<10))
	ownerWorks(t, a, func(rng *rand.Rand) {
		switch r := rng.IntN(100); {
		case r < 50:
			arena.New[node](a).left = nil
		case r < 80:
			arena.MakeSlice[byte](a, 0, 1+rng.IntN(600))
		case r < 90:
			arena.MakeSlice[p16](a, 1, 1+rng.IntN(8))
		default:
			_, _ = arena.TryMakeSlice[byte](a, 0, 1+rng.IntN(2000))
		}
	}, a.Reset, a.Free)
}

// The same for a Typed.
func TestTyped_ReadStatsWhileTheOwnerWorks(t *testing.T) {
	ty := arena.NewTyped[node](arena.WithBudget(statsBudget), arena.WithChunkSize(1<<10))
	ownerWorks(t, ty, func(rng *rand.Rand) {
		switch r := rng.IntN(100); {
		case r < 70:
			ty.New().right = nil
		case r < 90:
			ty.MakeSlice(1, 1+rng.IntN(40))
		default:
			_, _ = ty.TryNew()
		}
	}, ty.Reset, ty.Free)
}

// ownerWorks makes 20000 random allocations with alloc, with a Reset at
// least every cycleMax of them, then Frees, while another goroutine
// scrapes src; then it checks what ReadStats shows of the freed arena.
func ownerWorks(t *testing.T, src memkit.StatsSource, alloc func(*rand.Rand), reset, free func()) {
	stop := scrape(t, src)
	rng := rand.New(rand.NewPCG(3, 4))
	n := 0
	for range 20000 {
		alloc(rng)
		if n++; n == cycleMax || rng.IntN(200) == 0 {
			reset()
			n = 0
		}
	}
	free()
	reads := stop()
	var s memkit.Stats
	src.ReadStats(&s)
	if s.ReservedBytes != 0 || s.InUseBytes != 0 || s.LiveObjects != 0 || s.Releases != s.Grows {
		t.Errorf("after Free: %+v", s)
	}
	t.Logf("%d reads; %+v", reads, s)
}

// ReadStats shows what the owner last published: the fast path does not
// publish, a chunk taken, Reset and PublishStats do.
func TestReadStats_Lag(t *testing.T) {
	a := arena.NewArena()
	var s memkit.Stats
	arena.New[int64](a) // takes a chunk: published
	for range 99 {
		arena.New[int64](a) // fast path
	}
	a.ReadStats(&s)
	if s.LiveObjects != 1 || s.Allocs != 1 || s.InUseBytes != 8 || s.Grows != 1 {
		t.Errorf("after 100 News, one of them published: %+v", s)
	}
	a.PublishStats()
	a.ReadStats(&s)
	if s.LiveObjects != 100 || s.Allocs != 100 || s.InUseBytes != 800 {
		t.Errorf("after PublishStats: %+v", s)
	}
	arena.New[int64](a)
	a.Reset()
	a.ReadStats(&s)
	if s.LiveObjects != 0 || s.Allocs != 101 || s.Frees != 101 || s.InUseBytes != 0 {
		t.Errorf("after Reset: %+v", s)
	}

	ty := arena.NewTyped[int64]()
	ty.New()
	ty.New()
	ty.ReadStats(&s) // published when the first New took a chunk, before its object
	if s.LiveObjects != 0 || s.ReservedBytes != arena.DefaultChunkSize || s.Grows != 1 {
		t.Errorf("Typed, after 2 News: %+v", s)
	}
	ty.PublishStats()
	ty.ReadStats(&s)
	if s.LiveObjects != 2 || s.InUseBytes != 16 {
		t.Errorf("Typed, after PublishStats: %+v", s)
	}
}
