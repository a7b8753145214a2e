package bytepool_test

import (
	"math/rand/v2"
	"testing"

	"github.com/memkit/memkit/bytepool"
)

// TestCache_InUseFollowsAModelAcrossCachesAndPool moves buffers at random
// between the pool and two Caches, in every direction, through refills and
// spills, and checks at each Release that the pool's figures, counting
// every buffer (WithExactStats), equal the model's: a Cache counts the
// buffers it takes from and gives to the pool, and those it holds idle.
func TestCache_InUseFollowsAModelAcrossCachesAndPool(t *testing.T) {
	p := mustNew(t, bytepool.WithExactStats())
	caches := []*bytepool.Cache{p.NewCache(), p.NewCache()}
	type side struct {
		get func(int) []byte
		put func([]byte)
	}
	sides := []side{{p.Get, p.Put}, {caches[0].Get, caches[0].Put}, {caches[1].Get, caches[1].Put}}
	rng := rand.New(rand.NewPCG(3, 4))
	var live [][]byte
	var allocs uint64
	for round := 0; round < 20; round++ {
		for i := 0; i < 500; i++ {
			s := sides[rng.IntN(len(sides))]
			// Rounds alternate between growing and shrinking, so that the
			// Caches' lists fill and spill, and empty and refill.
			if len(live) > 0 && rng.IntN(10) < 3+4*(round%2) {
				j := rng.IntN(len(live))
				s.put(live[j])
				live[j] = live[len(live)-1]
				live = live[:len(live)-1]
				continue
			}
			live = append(live, s.get([]int{64, 512, 4096}[rng.IntN(3)]))
			allocs++
		}
		// Until a Release, the pool's figure may count a Cache's idle
		// buffers as it last saw them: up to a list per class per Cache.
		if st := readStats(p); absDiff(st.LiveObjects, uint64(len(live))) > 2*3*64 {
			t.Fatalf("round %d before Release: live %d; model %d", round, st.LiveObjects, len(live))
		}
		for _, c := range caches {
			c.Release()
		}
		st := readStats(p)
		if st.LiveObjects != uint64(len(live)) || st.Allocs != allocs || st.Frees != allocs-uint64(len(live)) {
			t.Fatalf("round %d: stats %+v; model live %d allocs %d", round, st, len(live), allocs)
		}
	}
}

func absDiff(a, b uint64) uint64 { return max(a, b) - min(a, b) }

// TestCache_IdleBuffersAreNotInUse checks that the buffers a refill brings
// into a Cache count as idle, not in use, as soon as the refill is done.
func TestCache_IdleBuffersAreNotInUse(t *testing.T) {
	p := mustNew(t, bytepool.WithExactStats())
	var bufs [][]byte
	for range 64 {
		bufs = append(bufs, p.Get(512))
	}
	for _, b := range bufs {
		p.Put(b)
	}
	c := p.NewCache()
	b := c.Get(512)
	if s := readStats(p); s.LiveObjects != 1 || s.InUseBytes != 512 {
		t.Fatalf("one buffer out of a Cache: live %d, in use %d bytes; want 1, 512", s.LiveObjects, s.InUseBytes)
	}
	c.Put(b)
	c.Release()
	if s := readStats(p); s.LiveObjects != 0 || s.Allocs != 65 || s.Frees != 65 {
		t.Fatalf("after Release: %+v", s)
	}
}
