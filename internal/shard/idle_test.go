package shard_test

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/internal/shard"
)

// drain takes every item it can get, running GCs so that the cleanups of
// tickets the sync.Pool dropped put their items back, until it has want
// items or a hundred GCs found nothing more. It returns the items taken.
func drain(x *shard.Idle, want int) map[int]bool {
	got := map[int]bool{}
	for gcs := 0; len(got) < want && gcs < 100; gcs++ {
		for {
			i, ok := x.Get()
			if !ok {
				break
			}
			if got[i] {
				panic("item handed out twice")
			}
			got[i] = true
		}
		runtime.GC()
		runtime.Gosched() // let the cleanup goroutine run
	}
	return got
}

func TestIdle_GetPut(t *testing.T) {
	x := shard.NewIdle(3)
	var out []int
	for range 3 {
		i, ok := x.Get()
		if !ok || x.IsOut(i) != true {
			t.Fatalf("Get: %d, %v", i, ok)
		}
		out = append(out, i)
	}
	if _, ok := x.Get(); ok {
		t.Fatal("a fourth Get of three items succeeded")
	}
	if x.Out() != 3 || x.Gets() != 3 || x.Made() != 3 {
		t.Fatalf("out %d gets %d made %d; want 3, 3, 3", x.Out(), x.Gets(), x.Made())
	}
	if !x.Put(out[1]) || x.Put(out[1]) {
		t.Fatal("Put, then a second Put of an idle item: want true, false")
	}
	if x.Out() != 2 || x.IsOut(out[1]) {
		t.Fatalf("out %d after a Put", x.Out())
	}
}

// The Gets are counted exactly for a ticket's first 64, then 64 at a
// time: a model of one ticket used k times.
func TestIdle_GetsEstimate(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops tickets at random under the race detector: more tickets, other counts")
	}
	for _, k := range []int{1, 63, 64, 65, 127, 128, 129, 1000} {
		x := shard.NewIdle(1)
		for range k {
			i, _ := x.Get()
			x.Put(i)
		}
		if x.Made() != 1 {
			t.Skip("a GC dropped the ticket")
		}
		want := uint64(k)
		if k > 64 {
			want = uint64(k) / 64 * 64
		}
		if got := x.Gets(); got != want || uint64(k)-got > 63 {
			t.Errorf("%d Gets counted as %d; want %d", k, got, want)
		}
	}
}

func TestIdle_ZeroAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops tickets at random under the race detector")
	}
	x := shard.NewIdle(4)
	i, _ := x.Get()
	x.Put(i)
	if a := testing.AllocsPerRun(1000, func() {
		i, _ := x.Get()
		x.Put(i)
	}); a != 0 {
		t.Fatalf("Get+Put: %v allocs", a)
	}
}

// Stress: goroutines take and give back items, each writing its tag into
// the item's owner slot and checking it is still there before the Put,
// through forced GCs at GOGC=1 (which drop tickets). After quiescence
// every item comes back exactly once.
func TestIdle_Stress(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	const items, workers, rounds = 64, 16, 3000
	x := shard.NewPooledIdle(items)
	owner := make([]int32, items) // the tag of the goroutine holding item i
	var mu sync.Mutex             // owner's slots are checked under it: the test's own bookkeeping
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []int
			for r := range rounds {
				if i, ok := x.Get(); ok {
					mu.Lock()
					if owner[i] != 0 {
						t.Errorf("item %d handed to %d while %d holds it", i, w+1, owner[i])
					}
					owner[i] = int32(w + 1)
					mu.Unlock()
					held = append(held, i)
				}
				if len(held) > 2 || (len(held) > 0 && r%3 == 0) {
					i := held[0]
					held = held[1:]
					mu.Lock()
					if owner[i] != int32(w+1) {
						t.Errorf("item %d: owner %d; want %d", i, owner[i], w+1)
					}
					owner[i] = 0
					mu.Unlock()
					if !x.Put(i) {
						t.Errorf("Put of out item %d refused", i)
					}
				}
				if r%500 == 0 {
					runtime.GC()
				}
			}
			for _, i := range held {
				mu.Lock()
				owner[i] = 0
				mu.Unlock()
				x.Put(i)
			}
		}()
	}
	wg.Wait()
	if n := x.Out(); n != 0 {
		t.Fatalf("%d items out after every worker gave its back", n)
	}
	if got := drain(x, items); len(got) != items {
		t.Fatalf("after quiescence %d of %d items came back", len(got), items)
	}
	if x.Out() != items {
		t.Fatalf("out %d after the drain; want %d", x.Out(), items)
	}
}

// A ticket the sync.Pool drops is recovered by its cleanup, and the Idle
// itself is collected with tickets still in the pool.
func TestIdle_RecoversDroppedTickets(t *testing.T) {
	x := shard.NewPooledIdle(8)
	var out []int
	for range 8 {
		i, _ := x.Get()
		out = append(out, i)
	}
	for _, i := range out {
		x.Put(i)
	}
	runtime.GC()
	runtime.GC() // the sync.Pool's victim cache is dropped at the second
	if got := drain(x, 8); len(got) != 8 {
		t.Fatalf("%d of 8 items after two GCs", len(got))
	}
	if x.Recovered() == 0 && !race.Enabled {
		t.Fatal("no item was recovered from a dropped ticket")
	}
}
