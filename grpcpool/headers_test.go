package grpcpool

import (
	"runtime"
	"sync"
	"testing"

	"github.com/memkit/memkit/internal/race"
)

// TestHeaders_KeptAcrossGCCycles: an idle header survives GC cycles, so a
// Get after them makes none (a sync.Pool would have dropped it).
func TestHeaders_KeptAcrossGCCycles(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	var hs headers
	hs.put(hs.get())
	allocs := testing.AllocsPerRun(20, func() {
		h := hs.get()
		runtime.GC()
		runtime.GC()
		hs.put(h)
	})
	if allocs != 0 {
		t.Fatalf("a Get and Put of a header across two GC cycles cost %v allocations; want 0", allocs)
	}
}

// TestHeaders_FoundFromAnyGoroutineAndBounded: headers put back on other
// goroutines are found, each header is handed out once at a time, and
// what exceeds the shards is dropped.
func TestHeaders_FoundFromAnyGoroutineAndBounded(t *testing.T) {
	var hs headers
	const n = headerShards*headersPerShard + 100
	got := make([]*[]byte, n)
	seen := map[*[]byte]bool{}
	for i := range got {
		got[i] = hs.get()
		if seen[got[i]] {
			t.Fatal("a header was handed out twice")
		}
		seen[got[i]] = true
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 4 {
				hs.put(got[i])
			}
		}()
	}
	wg.Wait()
	kept := 0
	for i := range hs.shards {
		kept += int(hs.shards[i].n.Load())
	}
	if kept != headerShards*headersPerShard {
		t.Fatalf("the shards keep %d headers; want %d", kept, headerShards*headersPerShard)
	}
	for range kept {
		if h := hs.get(); !seen[h] {
			t.Fatal("a Get made a header while idle ones were kept")
		}
	}
}
