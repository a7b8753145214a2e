package kv_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/kv"
)

// Concurrent Set, Get, View, Delete, Range and ReadStats, with compaction
// (small shards, overwrites of changing sizes) and index growth: run with
// -race. Each goroutine owns its keys, so it knows what each must hold;
// Range and ReadStats check what they can (a value is one of its key's).
// It runs with segments mapped one by one and carved from regions, of
// 4 KiB pages and of huge pages (with a spare prepared concurrently).
func TestMap_Concurrent(t *testing.T) {
	t.Run("segments=mapped", func(t *testing.T) { testMapConcurrent(t) })
	t.Run("segments=regions", func(t *testing.T) {
		defer kv.SetRegionsAfter(kv.SetRegionsAfter(0))
		testMapConcurrent(t)
	})
	t.Run("segments=huge-regions", func(t *testing.T) {
		defer kv.SetRegionsAfter(kv.SetRegionsAfter(0))
		testMapConcurrent(t, kv.WithHugePages())
	})
}

func testMapConcurrent(t *testing.T, opts ...kv.Option) {
	m := mustNew(t, append([]kv.Option{kv.WithShards(2)}, opts...)...)
	const workers, rounds = 4, 6
	keys := 2000
	if race.Enabled || checked.Enabled {
		keys = 300 // the detector, or the checked build's copies in Range, make each call 20 times slower
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, workers+2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				for i := range keys {
					k := fmt.Appendf(nil, "w%d-%d", w, i)
					v := val(w*keys+i+r, 50+(i*13+r*101)%700)
					if err := m.Set(k, v); err != nil {
						errs <- err
						return
					}
					got, ok := m.Get(nil, k)
					if !ok || !bytes.Equal(got, v) {
						errs <- fmt.Errorf("%s: read back %d bytes, %v", k, len(got), ok)
						return
					}
					m.View(k, func(b []byte) {
						if len(b) != len(v) {
							errs <- fmt.Errorf("%s: View saw %d bytes", k, len(b))
						}
					})
					if i%3 == r%3 {
						if !m.Delete(k) || m.Has(k) {
							errs <- fmt.Errorf("%s: Delete", k)
							return
						}
					}
				}
			}
		}()
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		var st memkit.Stats
		for {
			select {
			case <-stop:
				return
			default:
			}
			m.ReadStats(&st)
			if st.Frees > st.Allocs || st.LiveObjects != st.Allocs-st.Frees {
				errs <- fmt.Errorf("stats %v", &st)
				return
			}
		}
	}()
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			m.Range(func(k, v []byte) bool { return len(k) > 0 })
			m.Len()
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := 0
	for i := range keys {
		if i%3 != (rounds-1)%3 {
			want++
		}
	}
	if m.Len() != workers*want {
		t.Fatalf("Len %d; want %d", m.Len(), workers*want)
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	if st := readStats(m); st.Releases == 0 {
		t.Fatalf("stats %v: no compaction ran beside the readers", &st)
	}
}
