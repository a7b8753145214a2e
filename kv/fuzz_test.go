package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/kv"
)

// FuzzMap decodes the input into Set, Get, Has, View, Delete and Range
// calls on a Map of a fuzzed shape (shards, a budget, eviction, segments
// from regions, huge pages) and checks
// them against a Go map: every value reads back until it is replaced or
// deleted (or, with eviction, evicted: then it is absent, never wrong), the
// stats and the Map's own bookkeeping agree, and the misuse table's
// mistakes (a too-long key or value, a View slice written after fn — in
// the checked build —, use after Close) do what the table says and leave
// every other entry intact.
func FuzzMap(f *testing.F) {
	f.Add([]byte{0, 1, 5, 10, 1, 5, 2, 5, 3, 5, 4, 1})
	f.Add([]byte{0x13, 0, 1, 200, 0, 2, 250, 0, 3, 100, 1, 1, 2, 2, 8, 9, 10, 11})
	f.Add([]byte{0x80, 0, 7, 255, 0, 7, 255, 0, 7, 1, 0, 8, 255, 4, 7, 6, 0})
	f.Add([]byte{0x31, 0, 1, 200, 0, 2, 250, 0, 3, 100, 1, 1, 2, 2, 8, 9, 10, 11, 0, 1, 7, 3, 1})
	f.Add([]byte{0x21, 0, 1, 200, 0, 2, 250, 0, 3, 100, 1, 1, 2, 2, 8, 9, 10, 11, 0, 1, 7, 3, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		cfg := ops.Byte()
		opts := []kv.Option{kv.WithShards(1 << (cfg & 3))}
		evict := cfg&0x80 != 0
		if cfg&0x40 != 0 || evict {
			opts = append(opts, kv.WithBudget(1<<20))
		}
		if evict {
			opts = append(opts, kv.WithEviction())
		}
		if cfg&0x20 != 0 { // segments carved from regions from the first
			defer kv.SetRegionsAfter(kv.SetRegionsAfter(0))
		}
		if cfg&0x10 != 0 {
			opts = append(opts, kv.WithHugePages())
		}
		m, err := kv.New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		model := map[string][]byte{}
		failures := uint64(0)
		for ops.More() {
			k := fmt.Appendf(nil, "k%d", ops.Byte()%64)
			switch op := ops.Byte(); op % 12 {
			case 0, 1, 2: // Set, values up to ~64 KiB, some large
				n := ops.Uint16() >> (op / 3 % 4 * 4)
				v := bytes.Repeat([]byte{op}, n)
				err := m.Set(k, v)
				switch {
				case err == nil:
					model[string(k)] = v
				case errors.Is(err, kv.ErrBudget) && !evict && cfg&0x40 != 0:
					failures++ // the old value stays
				default:
					t.Fatalf("Set(%s, %d bytes): %v", k, n, err)
				}
			case 3, 4: // Get
				got, ok := m.Get([]byte("x"), k)
				want, wok := model[string(k)]
				if evict && !ok && wok {
					delete(model, string(k)) // evicted
					continue
				}
				if ok != wok || !bytes.Equal(got[1:], want) || got[0] != 'x' {
					t.Fatalf("Get(%s) = %d bytes, %v; want %d, %v", k, len(got)-1, ok, len(want), wok)
				}
			case 5: // Has and View
				_, wok := model[string(k)]
				ok := m.View(k, func(v []byte) {
					if !bytes.Equal(v, model[string(k)]) {
						t.Fatalf("View(%s): wrong value", k)
					}
				})
				if ok != m.Has(k) || (ok != wok && !evict) {
					t.Fatalf("View(%s) = %v, Has %v; want %v", k, ok, m.Has(k), wok)
				}
			case 6: // Delete
				_, wok := model[string(k)]
				if got := m.Delete(k); got != wok && !evict {
					t.Fatalf("Delete(%s) = %v; want %v", k, got, wok)
				}
				delete(model, string(k))
			case 7: // Range, stopping early sometimes
				stop := int(ops.Byte() % 8)
				n := 0
				m.Range(func(k, v []byte) bool {
					want, ok := model[string(k)]
					if !ok || !bytes.Equal(v, want) {
						t.Fatalf("Range: %s holds %d bytes; the model has %d, %v", k, len(v), len(want), ok)
					}
					n++
					return n != stop
				})
			case 8: // the mistake: a key or value too long
				if err := m.Set(make([]byte, kv.MaxKeyLen+1), nil); err != kv.ErrTooLarge {
					t.Fatalf("Set of a long key: %v", err)
				}
				failures++
			case 9: // the mistake: a View slice written after fn (the checked build)
				if !checked.Enabled {
					continue
				}
				var kept []byte
				if !m.View(k, func(v []byte) { kept = v }) || len(kept) == 0 {
					continue
				}
				kept[0] ^= 0x5a
				_, err := memkit.Leaks(m)
				kept[0] ^= 0x5a // poisoned again, for the quarantine
				var mu *memkit.Misuse
				if !errors.As(err, &mu) || mu.Kind != checked.UseAfterFree {
					t.Fatalf("a write through a kept View slice: Leaks = %v", err)
				}
			case 10, 11:
				if err := m.Check(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := m.Check(); err != nil {
			t.Fatal(err)
		}
		var st memkit.Stats
		m.ReadStats(&st)
		if !evict && (st.LiveObjects != uint64(len(model)) || m.Len() != len(model) || st.Failures != failures) {
			t.Fatalf("stats %v; want %d live, %d failures", &st, len(model), failures)
		}
		if st.InUseBytes+st.FreeBytes > st.ReservedBytes {
			t.Fatalf("stats %v: more in use and dead than reserved", &st)
		}
		// The last mistake: use after Close.
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		memtest.CheckPanic(t, panicClosed, func() { m.Has([]byte("k1")) })
		m.ReadStats(&st)
		if st.ReservedBytes != 0 {
			t.Fatalf("%d bytes reserved after Close", st.ReservedBytes)
		}
	})
}
