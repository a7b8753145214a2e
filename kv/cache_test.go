package kv_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/kv"
)

// The skewed trace of the eviction measurement. The comparison with
// fastcache (which the core module may not import) runs the same trace,
// built by a copy of these functions, in a separate program; see the
// CHANGELOG entry of kv for the figures.
const (
	traceKeys   = 500_000   // distinct keys
	traceLen    = 2_000_000 // requests
	traceBudget = 32 << 20  // the cache's memory: fastcache's smallest
)

// zipfTrace returns n requests over keys distinct keys, Zipf-distributed
// (s = 1.05: a few keys hot, a long tail), from a fixed seed.
func zipfTrace(n, keys int) []uint64 {
	z := rand.NewZipf(rand.New(rand.NewPCG(42, 1)), 1.05, 1, uint64(keys-1))
	t := make([]uint64, n)
	for i := range t {
		t[i] = z.Uint64()
	}
	return t
}

// traceValueLen is the length of key k's value: 100 to 1100 bytes.
func traceValueLen(k uint64) int { return 100 + int(k*2654435761%1001) }

// hitRatio replays the trace against a cache-aside user of get and set:
// a miss sets the value. It returns the share of requests that hit.
func hitRatio(trace []uint64, get func(k []byte) bool, set func(k, v []byte)) float64 {
	var key [8]byte
	value := make([]byte, 1100)
	hits := 0
	for _, k := range trace {
		binary.LittleEndian.PutUint64(key[:], k)
		if get(key[:]) {
			hits++
			continue
		}
		set(key[:], value[:traceValueLen(k)])
	}
	return float64(hits) / float64(len(trace))
}

// A cache-mode Map on the skewed trace: its hit ratio (logged; compared
// with fastcache's in the CHANGELOG) must beat a floor well under it.
func TestMap_EvictionHitRatio(t *testing.T) {
	if testing.Short() || race.Enabled || checked.Enabled {
		t.Skip("a 2-million-request trace: a measurement, run in the release build")
	}
	m := mustNew(t, kv.WithBudget(traceBudget), kv.WithEviction())
	dst := make([]byte, 0, 1100)
	r := hitRatio(zipfTrace(traceLen, traceKeys),
		func(k []byte) bool { var ok bool; dst, ok = m.Get(dst[:0], k); return ok },
		func(k, v []byte) {
			if err := m.Set(k, v); err != nil {
				t.Fatal(err)
			}
		})
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	st := readStats(m)
	t.Logf("kv.Map hit ratio %.4f (%d evictions, %d entries, %d bytes reserved of %d)", r, m.Evictions(), m.Len(), st.ReservedBytes, traceBudget)
	if r < 0.5 {
		t.Fatalf("hit ratio %.4f", r)
	}
}

// TestEviction_ShardWithNothingToEvict: in cache mode a Set never fails
// over the budget, even in a shard that holds nothing to evict because the
// other shards took the whole budget: it evicts from another shard. (With
// eviction only within the shard, a Set of an empty value failed with
// ErrBudget for some hash seeds: the fuzz seed 34f2f8a8e293526f.)
func TestEviction_ShardWithNothingToEvict(t *testing.T) {
	for round := range 20 {
		m, err := kv.New(kv.WithShards(8), kv.WithBudget(1<<20), kv.WithEviction())
		if err != nil {
			t.Fatal(err)
		}
		val := make([]byte, 60<<10)
		for i := range 400 {
			k := fmt.Appendf(nil, "k%d", (i*7919+round)%64)
			v := val[:(i*4099)%len(val)]
			if err := m.Set(k, v); err != nil {
				t.Fatalf("round %d: Set(%s, %d bytes): %v", round, k, len(v), err)
			}
		}
		if err := m.Check(); err != nil {
			t.Fatal(err)
		}
		m.Close()
	}
}
