package shard_test

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"unsafe"

	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/internal/shard"
)

// owner is a minimal owner of n items: keys 0 to n-1, a slot each.
type owner struct {
	x     *shard.Idle
	slots []shard.Slot
}

func newOwner(newIdle func(func(uintptr) *shard.Slot) *shard.Idle, n int) *owner {
	o := &owner{slots: make([]shard.Slot, n)}
	o.x = newIdle(func(k uintptr) *shard.Slot { return &o.slots[k] })
	for i := n - 1; i >= 0; i-- {
		o.x.Add(uintptr(i))
	}
	return o
}

func (o *owner) get() (int, bool) {
	t := o.x.Get()
	if t == nil {
		return -1, false
	}
	return int(t.Key()), true
}

func (o *owner) put(i int) bool {
	t := o.slots[i].Take()
	if t == nil {
		return false
	}
	o.x.Put(t)
	return true
}

// gets is the Gets counted in the slots.
func (o *owner) gets() uint64 {
	var n uint64
	for i := range o.slots {
		n += o.slots[i].Gets()
	}
	return n
}

func (o *owner) out() int {
	n := 0
	for i := range o.slots {
		if o.slots[i].Out() {
			n++
		}
	}
	return n
}

// drain takes every item it can get, running GCs so that the cleanups of
// tickets the sync.Pool dropped put their items back, until it has want
// items or a hundred GCs found nothing more. It returns the items taken.
func (o *owner) drain(t *testing.T, want int) map[int]bool {
	got := map[int]bool{}
	for gcs := 0; len(got) < want && gcs < 100; gcs++ {
		for {
			i, ok := o.get()
			if !ok {
				break
			}
			if got[i] {
				t.Fatalf("item %d handed out twice", i)
			}
			got[i] = true
		}
		runtime.GC()
		runtime.Gosched() // let the cleanup goroutine run
	}
	return got
}

func TestIdle_GetPut(t *testing.T) {
	o := newOwner(shard.NewIdle, 3)
	var out []int
	for range 3 {
		i, ok := o.get()
		if !ok || !o.slots[i].Out() {
			t.Fatalf("Get: %d, %v", i, ok)
		}
		out = append(out, i)
	}
	if out[0] != 0 {
		t.Fatalf("first item %d; want 0, the last added", out[0])
	}
	if _, ok := o.get(); ok {
		t.Fatal("a fourth Get of three items succeeded")
	}
	if o.out() != 3 || o.gets() != 3 || o.x.Made() != 3 {
		t.Fatalf("out %d gets %d made %d; want 3, 3, 3", o.out(), o.gets(), o.x.Made())
	}
	if !o.put(out[1]) || o.put(out[1]) {
		t.Fatal("Put, then a second Put of an idle item: want true, false")
	}
	if o.out() != 2 || o.slots[out[1]].Out() {
		t.Fatalf("out %d after a Put", o.out())
	}
}

// Every Get is counted in its item's slot, on the fast path and the slow:
// a model of two items, one taken k times and the other every third time.
// A slot costs its owner 16 bytes per item, on 64-bit and 32-bit
// platforms alike.
func TestSlot_Is16Bytes(t *testing.T) {
	if n := unsafe.Sizeof(shard.Slot{}); n != 16 {
		t.Fatalf("a Slot is %d bytes; want 16", n)
	}
}

func TestIdle_GetsCounted(t *testing.T) {
	for _, k := range []int{1, 64, 65, 129, 1000} {
		o := newOwner(shard.NewIdle, 2) // the race build's stash keeps every ticket
		for j := range k {
			i, ok := o.get()
			if j%3 == 0 { // two items out at once now and then
				i2, ok2 := o.get()
				ok = ok && ok2 && o.put(i2)
			}
			if !ok || !o.put(i) {
				t.Skip("a GC dropped a ticket")
			}
		}
		if want := uint64(k + (k+2)/3); o.gets() != want {
			t.Errorf("%d Gets counted as %d", want, o.gets())
		}
	}
}

func TestIdle_ZeroAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector's build stashes tickets under a lock, and allocates")
	}
	o := newOwner(shard.NewIdle, 4)
	i, _ := o.get()
	o.put(i)
	if a := testing.AllocsPerRun(1000, func() {
		i, _ := o.get()
		o.put(i)
	}); a != 0 {
		t.Fatalf("Get+Put: %v allocs", a)
	}
}

// Stress: goroutines take and give back items, each writing its tag into
// the item's owner slot and checking it is still there before the Put,
// through forced GCs at GOGC=1 (which drop tickets). After quiescence
// every item comes back exactly once. It runs the sync.Pool path in every
// build, the race detector's too.
func TestIdle_Stress(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	const items, workers, rounds = 64, 16, 3000
	o := newOwner(shard.NewPooledIdle, items)
	tags := make([]int32, items) // the tag of the goroutine holding item i
	var mu sync.Mutex            // the test's own bookkeeping
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []int
			for r := range rounds {
				if i, ok := o.get(); ok {
					mu.Lock()
					if tags[i] != 0 {
						t.Errorf("item %d handed to %d while %d holds it", i, w+1, tags[i])
					}
					tags[i] = int32(w + 1)
					mu.Unlock()
					held = append(held, i)
				}
				if len(held) > 2 || (len(held) > 0 && r%3 == 0) {
					i := held[0]
					held = held[1:]
					mu.Lock()
					if tags[i] != int32(w+1) {
						t.Errorf("item %d: tag %d; want %d", i, tags[i], w+1)
					}
					tags[i] = 0
					mu.Unlock()
					if !o.put(i) {
						t.Errorf("Put of out item %d refused", i)
					}
				}
				if r%500 == 0 {
					runtime.GC()
				}
			}
			for _, i := range held {
				mu.Lock()
				tags[i] = 0
				mu.Unlock()
				o.put(i)
			}
		}()
	}
	wg.Wait()
	if n := o.out(); n != 0 {
		t.Fatalf("%d items out after every worker gave its back", n)
	}
	if got := o.drain(t, items); len(got) != items {
		t.Fatalf("after quiescence %d of %d items came back", len(got), items)
	}
}

// A ticket the sync.Pool drops is recovered by its cleanup.
func TestIdle_RecoversDroppedTickets(t *testing.T) {
	o := newOwner(shard.NewPooledIdle, 8)
	var out []int
	for range 8 {
		i, _ := o.get()
		out = append(out, i)
	}
	for _, i := range out {
		o.put(i)
	}
	runtime.GC()
	runtime.GC() // the sync.Pool's victim cache is dropped at the second
	if got := o.drain(t, 8); len(got) != 8 {
		t.Fatalf("%d of 8 items after two GCs", len(got))
	}
	if o.x.Recovered() == 0 && !race.Enabled {
		t.Fatal("no item was recovered from a dropped ticket")
	}
}
