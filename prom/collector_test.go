package prom_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/prom"
	"github.com/memkit/memkit/slab"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeSource is a StatsSource that reports a fixed snapshot.
type fakeSource struct {
	mu sync.Mutex
	st memkit.Stats
}

func (f *fakeSource) ReadStats(s *memkit.Stats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	classes := append(s.Classes[:0], f.st.Classes...)
	*s = f.st
	s.Classes = classes
}

// newFakeSource returns a source with n classes of sizes 16, 32, 48, ...
// and distinct, non-zero values in every field.
func newFakeSource(n int) *fakeSource {
	f := &fakeSource{st: memkit.Stats{
		InUseBytes: 4096, ReservedBytes: 8192, LiveObjects: 3,
		FreeBytes: 4096, LargestFree: 1024,
		Allocs: 10, Frees: 7, HeapFallbacks: 2, Failures: 1,
		Grows: 4, Releases: 5, BadFrees: 6,
	}}
	for i := range n {
		k := uint64(i + 1)
		f.st.Classes = append(f.st.Classes, memkit.ClassStats{
			Size: 16 * k, InUseBytes: 16 * k * k, ReservedBytes: 32 * k * k,
			LiveObjects: k, IdleObjects: k, Allocs: 3 * k, Frees: 2 * k,
			Grows: k + 1, Releases: k + 2,
		})
	}
	return f
}

// lockedArena makes a slab.Arena, which is not safe for concurrent use, a
// StatsSource that may be scraped while it is used: the recommended way to
// export such an allocator.
type lockedArena struct {
	mu sync.Mutex
	a  *slab.Arena
}

func (l *lockedArena) ReadStats(s *memkit.Stats) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.a.ReadStats(s)
}

func TestCollector_Golden(t *testing.T) {
	tests := []struct {
		name string
		c    prometheus.Collector
	}{
		{"fake", prom.NewCollector("fake", newFakeSource(2))},
		{"fake_const_labels", prom.NewCollector("fake", newFakeSource(1),
			prom.WithConstLabels(prometheus.Labels{"tenant": "a"}))},
		{"fake_without_classes", prom.NewCollector("fake", newFakeSource(2), prom.WithoutClasses())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join("testdata", tt.name+".prom")
			if *update {
				reg := prometheus.NewPedanticRegistry()
				reg.MustRegister(tt.c)
				writeGolden(t, reg, path)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := testutil.CollectAndCompare(tt.c, f); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// writeGolden writes what reg gathers to path in the text format.
func writeGolden(t *testing.T, reg prometheus.Gatherer, path string) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Two collectors over real allocators of different kinds, and the Go
// collector, in one pedantic registry.
func TestCollector_PedanticRegistry(t *testing.T) {
	pool, err := bytepool.New(bytepool.WithExactStats()) // every Get and Put counted, for the figures below
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{100, 1000, 5000, 2 << 20} {
		pool.Put(pool.Get(n))
	}
	b := pool.Get(300)
	defer pool.Put(b)

	a, err := slab.NewArena(64, 64<<10, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	chunk := a.Alloc(100)
	defer a.DecRef(chunk)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(
		prom.NewCollector("pool", pool),
		prom.NewCollector("slab", &lockedArena{a: a}),
	)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]map[string]float64{} // name -> allocator/class -> value
	for _, mf := range mfs {
		m := map[string]float64{}
		for _, s := range mf.Metric {
			key := ""
			for _, l := range s.Label {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			v := s.GetGauge().GetValue() + s.GetCounter().GetValue()
			m[strings.TrimSpace(key)] = v
		}
		series[mf.GetName()] = m
	}
	for _, name := range []string{"pool", "slab"} {
		if v, ok := series["memkit_allocs_total"]["allocator="+name]; !ok || v == 0 {
			t.Errorf("memkit_allocs_total{allocator=%q} = %v, %v; want a non-zero value", name, v, ok)
		}
		if v := series["memkit_live_objects"]["allocator="+name]; v != 1 {
			t.Errorf("memkit_live_objects{allocator=%q} = %v, want 1", name, v)
		}
	}
	if v := series["memkit_heap_fallbacks_total"]["allocator=pool"]; v != 1 {
		t.Errorf("memkit_heap_fallbacks_total{allocator=pool} = %v, want 1 (the 2 MiB Get)", v)
	}
	// The 300-byte buffer is live in bytepool's 320-byte class, the
	// 100-byte chunk in the slab's 128-byte class.
	if v := series["memkit_class_live_objects"]["allocator=pool class=320"]; v != 1 {
		t.Errorf(`memkit_class_live_objects{allocator="pool",class="320"} = %v, want 1; have %v`, v, series["memkit_class_live_objects"])
	}
	if v := series["memkit_class_in_use_bytes"]["allocator=slab class=128"]; v != 128 {
		t.Errorf(`memkit_class_in_use_bytes{allocator="slab",class="128"} = %v, want 128`, v)
	}
}

func TestCollector_NamesDoNotCollide(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(prom.NewCollector("a", newFakeSource(3))); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(prom.NewCollector("b", newFakeSource(3))); err != nil {
		t.Fatalf("second allocator with another name: %v", err)
	}
	// The same name twice is a collision the registry must reject...
	if err := reg.Register(prom.NewCollector("a", newFakeSource(3))); err == nil {
		t.Error("registering allocator \"a\" twice succeeded")
	}
	// Const labels with the same names and other values tell apart two
	// allocators of the same name.
	shards := prometheus.NewPedanticRegistry()
	for _, shard := range []string{"1", "2"} {
		c := prom.NewCollector("a", newFakeSource(3), prom.WithConstLabels(prometheus.Labels{"shard": shard}))
		if err := shards.Register(c); err != nil {
			t.Fatalf("allocator \"a\" shard %s: %v", shard, err)
		}
	}
	if n, err := testutil.GatherAndCount(shards, "memkit_allocs_total"); n != 2 || err != nil {
		t.Errorf("two shards of \"a\": %d memkit_allocs_total series, %v; want 2", n, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "memkit_allocs_total" {
			continue
		}
		got := map[string]bool{}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "allocator" {
					got[l.GetValue()] = true
				}
			}
		}
		if !got["a"] || !got["b"] || len(got) != 2 {
			t.Errorf("memkit_allocs_total allocators = %v, want a and b", got)
		}
		return
	}
	t.Error("no memkit_allocs_total gathered")
}

func TestCollector_InvalidConfigFailsRegistration(t *testing.T) {
	tests := []struct {
		name string
		c    prometheus.Collector
		want string
	}{
		{"empty name", prom.NewCollector("", newFakeSource(1)), "memkit/prom: empty allocator name"},
		{"nil source", prom.NewCollector("x", nil), `memkit/prom: nil StatsSource for allocator "x"`},
		{"reserved allocator", prom.NewCollector("x", newFakeSource(1),
			prom.WithConstLabels(prometheus.Labels{"allocator": "y"})), `memkit/prom: WithConstLabels: label "allocator" is reserved`},
		{"reserved class", prom.NewCollector("x", newFakeSource(1),
			prom.WithConstLabels(prometheus.Labels{"class": "y"})), `memkit/prom: WithConstLabels: label "class" is reserved`},
		{"bad label name", prom.NewCollector("x", newFakeSource(1),
			prom.WithConstLabels(prometheus.Labels{"__reserved": "y"})), `memkit/prom: "__reserved" is not a valid label name`},
		{"bad name", prom.NewCollector("\xff", newFakeSource(1)), "memkit/prom: label value \"\\xff\" is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := prometheus.NewRegistry().Register(tt.c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Register error = %v, want one containing %q", err, tt.want)
			}
			// Collect must not panic; it reports the error instead.
			ch := make(chan prometheus.Metric, 1)
			tt.c.Collect(ch)
			close(ch)
			for m := range ch {
				if err := m.Write(nil); err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("collected metric error = %v, want one containing %q", err, tt.want)
				}
			}
		})
	}
}

// A class set that changes between snapshots gets fresh labels where it
// changed.
func TestCollector_ClassSetChanges(t *testing.T) {
	src := newFakeSource(2)
	c := prom.NewCollector("fake", src)
	if n := testutil.CollectAndCount(c, "memkit_class_allocs_total"); n != 2 {
		t.Fatalf("2 classes: %d class series", n)
	}
	src.mu.Lock()
	src.st.Classes[1].Size = 40
	src.st.Classes = append(src.st.Classes, memkit.ClassStats{Size: 1 << 40, Allocs: 9})
	src.mu.Unlock()
	const want = `
# HELP memkit_class_allocs_total Successful allocations served from this size class. For an Elastic bytepool without bytepool.WithExactStats (grpcpool and httppool by default) this is an estimate from a 1-in-64 sample of its buffers, so a few recycled buffers may show 0 beside many grows.
# TYPE memkit_class_allocs_total counter
memkit_class_allocs_total{allocator="fake",class="16"} 3
memkit_class_allocs_total{allocator="fake",class="40"} 6
memkit_class_allocs_total{allocator="fake",class="1099511627776"} 9
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "memkit_class_allocs_total"); err != nil {
		t.Fatal(err)
	}
}

// After the first scrape, Collect allocates once whatever the number of
// classes: the snapshot and the class labels are reused, and the metrics
// it sends share one block.
func TestCollector_CollectAllocatesOnce(t *testing.T) {
	for _, classes := range []int{0, 1, 64} {
		t.Run(fmt.Sprintf("classes=%d", classes), func(t *testing.T) {
			c := prom.NewCollector("fake", newFakeSource(classes))
			ch := make(chan prometheus.Metric, 12+8*classes)
			collect := func() {
				c.Collect(ch)
				for len(ch) > 0 {
					<-ch
				}
			}
			collect() // the first fills the snapshot and the labels
			if got := testing.AllocsPerRun(20, collect); got != 1 {
				t.Errorf("Collect allocates %v times, want 1", got)
			}
		})
	}
}

// Scrapes run concurrently with each other and with the allocator's users;
// the race detector checks the collector's own state.
func TestCollector_ConcurrentCollect(t *testing.T) {
	pool, err := bytepool.New(bytepool.WithExactStats()) // every Get and Put counted, for the figures below
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector("pool", pool))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			pool.Put(pool.Get(64 + i%4096))
		}
	}()
	var scrapers sync.WaitGroup
	for range 4 {
		scrapers.Add(1)
		go func() {
			defer scrapers.Done()
			for range 20 {
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	scrapers.Wait()
	close(stop)
	wg.Wait()
}

// Metrics a caller keeps from one Collect keep their values after the
// next.
func TestCollector_KeptMetricsStayValid(t *testing.T) {
	src := newFakeSource(1)
	c := prom.NewCollector("fake", src)
	first := make(chan prometheus.Metric, 20)
	c.Collect(first)
	close(first)
	src.mu.Lock()
	src.st.Allocs = 1000
	src.st.Classes[0].Allocs = 1000
	src.mu.Unlock()
	second := make(chan prometheus.Metric, 20)
	c.Collect(second)

	var out dto.Metric
	n := 0
	for m := range first {
		out.Reset()
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		if v := out.GetCounter().GetValue(); v == 1000 {
			t.Errorf("%v: value of the second Collect in a metric of the first", m.Desc())
		}
		n++
	}
	if n != 20 {
		t.Errorf("first Collect sent %d metrics, want 20", n)
	}
}

// The help of every figure an Elastic bytepool estimates says so, and how
// to count exactly; the exact figures' help does not.
func TestCollector_HelpSaysWhichFiguresAreEstimates(t *testing.T) {
	estimated := map[string]bool{
		"memkit_in_use_bytes": true, "memkit_live_objects": true, "memkit_allocs_total": true, "memkit_frees_total": true,
		"memkit_class_in_use_bytes": true, "memkit_class_live_objects": true, "memkit_class_allocs_total": true, "memkit_class_frees_total": true,
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector("fake", &fakeSource{st: memkit.Stats{Allocs: 1, Classes: []memkit.ClassStats{{Size: 16, Allocs: 1}}}}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) == 0 {
		t.Fatal("nothing gathered")
	}
	for _, mf := range mfs {
		says := strings.Contains(mf.GetHelp(), "an estimate from a 1-in-64 sample") && strings.Contains(mf.GetHelp(), "bytepool.WithExactStats")
		if says != estimated[mf.GetName()] {
			t.Errorf("%s: help says estimate %v; want %v: %q", mf.GetName(), says, estimated[mf.GetName()], mf.GetHelp())
		}
	}
}
