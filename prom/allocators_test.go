package prom_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/buddy"
	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/kv"
	"github.com/memkit/memkit/prom"
	"github.com/memkit/memkit/ringbuf"
	"github.com/memkit/memkit/slab"
)

// TestCollector_EveryAllocator registers a collector for one of each memkit
// allocator, each with something allocated, in one pedantic registry, and
// checks that each reports its allocation: every allocator joins the
// exporter through StatsSource alone.
func TestCollector_EveryAllocator(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	pool, err := bytepool.New(bytepool.WithExactStats()) // every Get and Put counted, for the figures below
	must(err)
	pool.Get(100)
	sl, err := slab.NewArena(64, 1<<20, 2, nil)
	must(err)
	sl.Alloc(100)
	ring, err := ringbuf.New(8, 64)
	must(err)
	must(ring.Write([]byte("record")))
	ar := arena.NewArena()
	arena.New[[4]*int](ar)
	ap := arena.NewPool()
	pa := ap.Get()
	arena.New[int](pa)
	ap.Put(pa) // a Pool reports its arenas' counters as of their last Put
	bp, err := buffer.NewPool()
	must(err)
	bp.Get().WriteString("held")
	fixed, err := buffer.NewFixedPool(4, 1024)
	must(err)
	fixed.Checkout()
	ex, err := extent.New()
	must(err)
	ex.Malloc(100)
	bd, err := buddy.New(1<<20, 64)
	must(err)
	bd.Alloc(100)
	bd.PublishStats() // the owner publishes its counts; ReadStats reads what was published
	km, err := kv.New()
	must(err)
	defer km.Close()
	must(km.Set([]byte("key"), []byte("value")))

	sources := map[string]memkit.StatsSource{
		"bytepool": pool, "slab": sl, "ringbuf": ring, "arena": ar, "arena_pool": ap,
		"buffer": bp, "fixedpool": fixed, "extent": ex, "buddy": bd, "kv": km,
	}
	reg := prometheus.NewPedanticRegistry()
	for name, src := range sources {
		reg.MustRegister(prom.NewCollector(name, src))
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("pedantic gather: %v", err)
	}
	allocs := map[string]float64{}
	free := map[string]float64{}    // memkit_free_bytes
	largest := map[string]float64{} // memkit_largest_free_bytes
	for _, mf := range mfs {
		var into map[string]float64
		switch mf.GetName() {
		case "memkit_allocs_total":
			into = allocs
		case "memkit_free_bytes":
			into = free
		case "memkit_largest_free_bytes":
			into = largest
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "allocator" {
					into[l.GetValue()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
	}
	// The range allocators report their free memory: extent's 1 MiB block
	// less the 100 bytes (and guard bytes) allocated, in one range; buddy's
	// 1 MiB region less a 128-byte block, whose largest free block is the
	// upper half.
	if f := free["extent"]; f < 1<<20-200 || f > 1<<20-100 || largest["extent"] != f {
		t.Errorf("extent: memkit_free_bytes %v, memkit_largest_free_bytes %v; want about 1MiB-100, equal", f, largest["extent"])
	}
	if free["buddy"] != 1<<20-128 || largest["buddy"] != 1<<19 {
		t.Errorf("buddy: memkit_free_bytes %v, memkit_largest_free_bytes %v; want %d and %d", free["buddy"], largest["buddy"], 1<<20-128, 1<<19)
	}
	if free["bytepool"] != 0 || largest["bytepool"] != 0 {
		t.Errorf("bytepool: memkit_free_bytes %v, memkit_largest_free_bytes %v; want 0 for a pool", free["bytepool"], largest["bytepool"])
	}
	for name := range sources {
		if allocs[name] < 1 {
			t.Errorf("%s: memkit_allocs_total = %v; want at least 1 (all: %v)", name, allocs[name], allocs)
		}
	}
	if t.Failed() {
		var b strings.Builder
		for name, src := range sources {
			var s memkit.Stats
			src.ReadStats(&s)
			b.WriteString(name + ": " + s.String() + "\n")
		}
		t.Log(b.String())
	}
}
