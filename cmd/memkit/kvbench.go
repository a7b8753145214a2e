package main

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memkit/memkit/internal/proc"
)

// This file is the KV family: kv.Map's Get, Set and a 90/10 mix beside a
// sharded standard-library map and the byte caches users pick today, on one
// goroutine (KV) and on every P (KVParallel). The stores hold kvBenchKeys
// entries of 16-byte keys and 100-1100-byte values, small enough for the
// bench's time budget; `memkit heap` is the large-heap comparison.

const (
	kvBenchKeys  = 1 << 16
	kvBenchOps   = 1 << 16 // length of the precomputed op sequence
	kvBenchSizes = 256     // distinct values Set draws from
)

// kvBenchOpsNames are the operations: all Gets, all Sets (overwrites with a
// value of a new size), and 9 Gets to 1 Set.
var kvBenchOpsNames = []string{"get", "set", "mix90-10"}

func init() {
	for _, par := range []bool{false, true} {
		fam := "KV"
		if par {
			fam = "KVParallel"
		}
		for op := range kvBenchOpsNames {
			w := fam + "/op=" + kvBenchOpsNames[op]
			for _, impl := range kvImpls {
				register(bench{workload: w, impl: impl, rounds: noisyRounds, group: "KV/op=" + kvBenchOpsNames[op],
					run: func(b *testing.B) { kvBench(b, impl, op, par) }})
			}
		}
	}
}

// kvData is the bench's keys, the values they are filled with, the values
// Sets overwrite with, and the op sequence: each entry's low bits pick a
// key, and 1 in 10 is a Set in the mix.
type kvData struct {
	keys   [][]byte
	fill   [][]byte
	values [][]byte
	ops    []uint32
}

var kvBenchData = sync.OnceValue(func() *kvData {
	rng := rand.New(rand.NewPCG(22, 22))
	d := &kvData{keys: make([][]byte, kvBenchKeys), fill: make([][]byte, kvBenchKeys),
		values: make([][]byte, kvBenchSizes), ops: make([]uint32, kvBenchOps)}
	val := func() []byte {
		v := make([]byte, 100+rng.IntN(1001))
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		return v
	}
	for i := range d.keys {
		d.keys[i] = fmt.Appendf(nil, "key:%012d", i)
		d.fill[i] = val()
	}
	for i := range d.values {
		d.values[i] = val()
	}
	for i := range d.ops {
		d.ops[i] = rng.Uint32()
	}
	return d
})

// kvFixture is the last filled store, reused while the same impl's bench
// asks again (testing.Benchmark calls a bench several times as it grows
// b.N), and closed when another impl's is needed.
var kvFixture struct {
	impl  string
	store kvStore
}

func kvFilled(impl string) kvStore {
	if kvFixture.impl == impl {
		return kvFixture.store
	}
	if kvFixture.store != nil {
		kvFixture.store.Close()
		kvFixture.store = nil
	}
	d := kvBenchData()
	var n int64
	for i := range d.keys {
		n += int64(len(d.keys[i]) + len(d.fill[i]))
	}
	// fastcache gets 4× the data here: at 64 Ki entries its 512 buckets
	// would otherwise drop entries, and a drop would make Get a miss.
	s := must(newKVStore(impl, kvSizing{entries: kvBenchKeys, bytes: n, cacheFactor: 4}))
	for i := range d.keys {
		if err := s.Set(d.keys[i], d.fill[i]); err != nil {
			panic(err)
		}
	}
	kvFixture.impl, kvFixture.store = impl, s
	return s
}

// kvOp does op number i of the sequence (get, set or the mix) on s with
// scratch dst, and returns dst for reuse.
func kvOp(s kvStore, d *kvData, op int, i uint32, dst []byte) []byte {
	r := d.ops[i%kvBenchOps]
	k := d.keys[(r>>8)%kvBenchKeys]
	if op == 1 || (op == 2 && r%10 == 0) {
		if err := s.Set(k, d.values[r%kvBenchSizes]); err != nil {
			panic(err)
		}
		return dst
	}
	dst, _ = s.Get(dst[:0], k)
	return dst
}

// kvBench runs op on impl's store, on one goroutine or on every P. Beside
// ns/op it reports cpu-ns/op, the process's CPU time (getrusage) per
// operation: on a machine shared with other work, a parallel row's ns/op
// says how much CPU it was given, and cpu-ns/op, set against the serial
// row's, what running on every P cost each operation (lock waits, cache
// lines moving between cores, memory bandwidth).
func kvBench(b *testing.B, impl string, op int, parallel bool) {
	s := kvFilled(impl)
	d := kvBenchData()
	b.ReportAllocs()
	cpu0, ok := proc.CPU()
	if ok {
		defer func() {
			cpu1, _ := proc.CPU()
			b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
		}()
	}
	if !parallel {
		dst := make([]byte, 0, 2048)
		b.ResetTimer()
		for i := range uint32(b.N) {
			dst = kvOp(s, d, op, i, dst)
		}
		return
	}
	var start atomic.Uint32
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]byte, 0, 2048)
		i := start.Add(kvBenchOps / 8) // goroutines walk different parts of the sequence
		for pb.Next() {
			dst = kvOp(s, d, op, i, dst)
			i++
		}
	})
}
