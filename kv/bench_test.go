package kv_test

import (
	"encoding/binary"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memkit/memkit/kv"
)

// benchStore is what the benchmarks drive: the Map, or the careful
// standard-library baseline.
type benchStore interface {
	Set(k, v []byte) error
	Get(dst, k []byte) ([]byte, bool)
}

// stdMap is the baseline: 256 shards of map[string][]byte behind RWMutexes.
type stdMap struct {
	shards [256]struct {
		sync.RWMutex
		m map[string][]byte
		_ [64]byte
	}
}

func newStdMap() *stdMap {
	s := &stdMap{}
	for i := range s.shards {
		s.shards[i].m = map[string][]byte{}
	}
	return s
}

func (s *stdMap) shard(k []byte) int {
	h := uint32(2166136261)
	for _, c := range k {
		h = (h ^ uint32(c)) * 16777619
	}
	return int(h & 255)
}

func (s *stdMap) Set(k, v []byte) error {
	sh := &s.shards[s.shard(k)]
	sh.Lock()
	old := sh.m[string(k)]
	if cap(old) >= len(v) {
		sh.m[string(k)] = append(old[:0], v...)
	} else {
		sh.m[string(k)] = append([]byte(nil), v...)
	}
	sh.Unlock()
	return nil
}

func (s *stdMap) Get(dst, k []byte) ([]byte, bool) {
	sh := &s.shards[s.shard(k)]
	sh.RLock()
	v, ok := sh.m[string(k)]
	dst = append(dst, v...)
	sh.RUnlock()
	return dst, ok
}

const benchKeys = 100000

func benchKeysOf() [][]byte {
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user:%08d", i)
	}
	return keys
}

func fill(b *testing.B, s benchStore, keys [][]byte) {
	for i, k := range keys {
		if err := s.Set(k, val(i, 100+i%1000)); err != nil {
			b.Fatal(err)
		}
	}
}

func stores(b *testing.B) []struct {
	name string
	s    benchStore
} {
	m, err := kv.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return []struct {
		name string
		s    benchStore
	}{{"memkit", m}, {"stdmap", newStdMap()}}
}

// BenchmarkMap_Get, _Set and _Mix (90% Get, 10% Set of another size) over
// 100,000 entries of 100-1100 bytes, serial and RunParallel.
func BenchmarkMap_Get(b *testing.B) { benchOps(b, 100) }
func BenchmarkMap_Set(b *testing.B) { benchOps(b, 0) }
func BenchmarkMap_Mix(b *testing.B) { benchOps(b, 90) }

func benchOps(b *testing.B, getPct int) {
	keys := benchKeysOf()
	value := val(1, 1100)
	for _, st := range stores(b) {
		fill(b, st.s, keys)
		b.Run("impl="+st.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]byte, 0, 2048)
			for i := range b.N {
				k := keys[(i*7919)%benchKeys]
				if i%100 < getPct {
					dst, _ = st.s.Get(dst[:0], k)
				} else {
					st.s.Set(k, value[:100+i%1000])
				}
			}
		})
		b.Run("impl="+st.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			var seed atomic.Uint64
			b.RunParallel(func(pb *testing.PB) {
				dst := make([]byte, 0, 2048)
				i := int(seed.Add(1) * 1000003)
				for pb.Next() {
					k := keys[(i*7919)%benchKeys]
					if i%100 < getPct {
						dst, _ = st.s.Get(dst[:0], k)
					} else {
						st.s.Set(k, value[:100+i%1000])
					}
					i++
				}
			})
		})
	}
}

// BenchmarkMap_SetRandom overwrites random keys with values of random
// sizes (100-1100 bytes), as memkit bench's KV/op=set does: half the
// overwrites do not fit in place, so this is the path that compacts.
func BenchmarkMap_SetRandom(b *testing.B) {
	keys := benchKeysOf()
	values := make([][]byte, 256)
	for i := range values {
		values[i] = val(i, 100+(i*7877)%1001)
	}
	for _, st := range stores(b) {
		fill(b, st.s, keys)
		b.Run("impl="+st.name, func(b *testing.B) {
			b.ReportAllocs()
			x := uint32(1)
			for range b.N {
				x = xorshift32(x)
				st.s.Set(keys[x%benchKeys], values[x>>24])
			}
		})
	}
}

// BenchmarkMap_Contended is the worst case for the shard locks: one
// shard, one or sixteen goroutines per P, 10% Sets. It is why the locks
// block at once rather than spin first: spinning for up to 50 µs before
// blocking (which kept the second CPU of memkit bench's RunParallel rows
// busy) took it from 48 to 60-146 ns/op at one goroutine per P and to
// 1,650-5,200 at sixteen, where a spinner holds the P the lock's holder
// needs to let go.
func BenchmarkMap_Contended(b *testing.B) {
	for _, par := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines-per-P=%d", par), func(b *testing.B) {
			m, err := kv.New(kv.WithShards(1))
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			keys := make([][]byte, 1024)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "key-%d", i)
				m.Set(keys[i], make([]byte, 100+i%500))
			}
			val := make([]byte, 600)
			b.SetParallelism(par)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				dst := make([]byte, 0, 1024)
				i := 0
				for pb.Next() {
					k := keys[i*7919%len(keys)]
					if i%10 == 0 {
						m.Set(k, val[:100+i%500])
					} else {
						dst, _ = m.Get(dst[:0], k)
					}
					i++
				}
			})
		})
	}
}

var largeEntries = flag.Int("kv.large", 1<<20, "entries of BenchmarkMap_OverwriteLarge's Map")

// large is BenchmarkMap_OverwriteLarge's Map, filled once per process.
var large struct {
	once   sync.Once
	m      *kv.Map
	n      uint32
	x      uint32 // the random sequence, continued from call to call
	values [][]byte
}

// largeKey writes the 8-byte key of entry i to dst.
func largeKey(dst *[8]byte, i uint32) []byte {
	binary.LittleEndian.PutUint64(dst[:], uint64(i)*0x9E3779B97F4A7C15)
	return dst[:]
}

// BenchmarkMap_OverwriteLarge overwrites random entries of a Map far
// larger than the CPU's caches (-kv.large entries of 100-1100 bytes; 2^20
// by default, ~600 MiB; memkit heap's 3,000,000 is ~1.8 GB) with values
// of random sizes, after as many overwrites as it has entries: past the
// Map's first phase, it compacts in step with the overwrites
// (docs/performance.md), and a compaction step's loads are what it
// measures beside Set's own: the index slot and the entry of each entry
// it moves. With -short, 2^16 entries at most.
func BenchmarkMap_OverwriteLarge(b *testing.B) {
	large.once.Do(func() {
		m, err := kv.New()
		if err != nil {
			b.Fatal(err)
		}
		large.m, large.n = m, uint32(*largeEntries)
		if testing.Short() { // the CI's run of every benchmark once
			large.n = min(large.n, 1<<16)
		}
		for i := range 256 {
			large.values = append(large.values, val(i, 100+(i*7877)%1001))
		}
		var k [8]byte
		for i := range large.n {
			if err := m.Set(largeKey(&k, i), large.values[i%256]); err != nil {
				b.Fatal(err)
			}
		}
		x := uint32(7)
		defer func() { large.x = x }()
		for range large.n {
			x = xorshift32(x)
			if err := m.Set(largeKey(&k, x%large.n), large.values[x>>24]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportAllocs()
	var k [8]byte
	x := large.x
	for b.Loop() {
		x = xorshift32(x)
		large.m.Set(largeKey(&k, x%large.n), large.values[x>>24])
	}
	large.x = x // a sequence run again would overwrite each entry with its size, in place
}

// xorshift32 is the benchmarks' random sequence: the next of x, never 0
// for an x that is not.
func xorshift32(x uint32) uint32 {
	x ^= x << 13
	x ^= x >> 17
	x ^= x << 5
	return x
}
