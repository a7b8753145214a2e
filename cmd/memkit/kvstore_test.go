package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

// TestKVStores_ReadBack checks every store that must hold a data set (all
// but ristretto, whose Set may drop by design): what is set is read back,
// overwrites with a longer and a shorter value win, an absent key is a
// miss, and Get appends to dst.
func TestKVStores_ReadBack(t *testing.T) {
	for _, impl := range []string{"memkit", "stdmap", "idmap", "fastcache", "bigcache"} {
		t.Run("impl="+impl, func(t *testing.T) {
			const n = 2000
			s, err := newKVStore(impl, kvSizing{entries: n, bytes: n * 600, cacheFactor: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			key := func(i int) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(i)) }
			val := func(i, gen int) []byte { return bytes.Repeat([]byte{byte(i + gen)}, 100+(i*7+gen*300)%1001) }
			for gen := range 3 {
				for i := range n {
					if err := s.Set(key(i), val(i, gen)); err != nil {
						t.Fatalf("Set(%d) gen %d: %v", i, gen, err)
					}
				}
				for i := range n {
					got, ok := s.Get([]byte("prefix"), key(i))
					if !ok || !bytes.Equal(got, append([]byte("prefix"), val(i, gen)...)) {
						t.Fatalf("gen %d: Get(%d) = %d bytes, %v; want prefix and %d bytes", gen, i, len(got), ok, len(val(i, gen)))
					}
				}
			}
			if got, ok := s.Get(nil, key(n+1)); ok || len(got) != 0 {
				t.Fatalf("Get of an absent key = %q, %v", got, ok)
			}
		})
	}
}

// TestKVBench_MapZeroAllocs checks the target for the bench's
// memkit column: kv.Map's Get and Set (an overwrite with a new size)
// allocate nothing on the Go heap in steady state.
func TestKVBench_MapZeroAllocs(t *testing.T) {
	s := kvFilled("memkit")
	d := kvBenchData()
	dst := make([]byte, 0, 2048)
	for op, name := range kvBenchOpsNames {
		i := uint32(0)
		for ; i < 4096; i++ { // steady state: the first overwrites of a size may grow a class
			dst = kvOp(s, d, op, i, dst)
		}
		if n := testing.AllocsPerRun(1000, func() { dst = kvOp(s, d, op, i, dst); i++ }); n != 0 {
			t.Errorf("kv.Map %s: %v allocs/op; want 0", name, n)
		}
	}
}

// TestKVStores_Names checks that every store the reports name has a
// description and can be built.
func TestKVStores_Names(t *testing.T) {
	for _, impl := range append(kvImpls, "idmap") {
		if kvImplDocs[impl] == "" {
			t.Errorf("store %q has no entry in kvImplDocs", impl)
		}
		s, err := newKVStore(impl, kvSizing{entries: 10, bytes: 1000})
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
		s.Close()
	}
	if _, err := newKVStore("nope", kvSizing{}); err == nil || err.Error() != fmt.Sprintf("unknown store %q", "nope") {
		t.Fatalf("an unknown store gave %v", err)
	}
}
