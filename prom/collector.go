package prom

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/memkit/memkit"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Label names the collector sets on its series.
const (
	allocatorLabel = "allocator"
	classLabel     = "class"
)

// stat is one allocator-wide series: its name, help, type and the field of
// memkit.Stats it reports.
type stat struct {
	name, help string
	typ        prometheus.ValueType
	value      func(*memkit.Stats) uint64
}

// classStat is one per-class series and the field of memkit.ClassStats it
// reports.
type classStat struct {
	name, help string
	typ        prometheus.ValueType
	value      func(*memkit.ClassStats) uint64
}

// estimateNote ends the help of every figure an Elastic bytepool estimates
// (memkit.Stats.Estimated).
const estimateNote = " For an Elastic bytepool without bytepool.WithExactStats (grpcpool and httppool by default) this is an estimate from a 1-in-64 sample of its buffers, so a few recycled buffers may show 0 beside many grows."

var stats = [...]stat{
	{"memkit_in_use_bytes", "Bytes in objects the allocator handed out and has not taken back, counted at the capacity it reserved for them." + estimateNote,
		prometheus.GaugeValue, func(s *memkit.Stats) uint64 { return s.InUseBytes }},
	{"memkit_reserved_bytes", "Bytes the allocator holds: in use plus idle memory kept for reuse. Memory already given back to the GC or the OS is not counted.",
		prometheus.GaugeValue, func(s *memkit.Stats) uint64 { return s.ReservedBytes }},
	{"memkit_live_objects", "Objects the allocator handed out and has not taken back." + estimateNote,
		prometheus.GaugeValue, func(s *memkit.Stats) uint64 { return s.LiveObjects }},
	{"memkit_free_bytes", "Reserved bytes a range allocator (extent, buddy) can carve allocations from: reserved less in use. Zero for pools.",
		prometheus.GaugeValue, func(s *memkit.Stats) uint64 { return s.FreeBytes }},
	{"memkit_largest_free_bytes", "The largest piece of free memory of a range allocator: the largest request it serves without new memory. 1 - this / memkit_free_bytes is the fragmentation. Zero for pools.",
		prometheus.GaugeValue, func(s *memkit.Stats) uint64 { return s.LargestFree }},
	{"memkit_allocs_total", "Successful allocations, heap fallbacks included." + estimateNote,
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.Allocs }},
	{"memkit_frees_total", "Objects returned to the allocator and accepted." + estimateNote,
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.Frees }},
	{"memkit_heap_fallbacks_total", "Allocations served by the Go heap instead of the allocator's own memory: sizes above the largest class, or requests made while a budget was exhausted.",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.HeapFallbacks }},
	{"memkit_failures_total", "Allocation attempts that failed without side effects (TryAlloc-style calls that returned false, ErrBudget or ErrNoSpace).",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.Failures }},
	{"memkit_grows_total", "Times the allocator obtained new memory (a buffer from the heap, a slab, a chunk).",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.Grows }},
	{"memkit_releases_total", "Times the allocator gave idle memory back to the GC or the OS.",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.Releases }},
	{"memkit_bad_frees_total", "Frees the allocator rejected: memory it did not hand out, or a slice whose start or capacity changed. Rejected memory is left to the GC.",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.BadFrees }},
}

var classStats = [...]classStat{
	{"memkit_class_in_use_bytes", "Bytes in objects of this size class handed out and not yet returned." + estimateNote,
		prometheus.GaugeValue, func(c *memkit.ClassStats) uint64 { return c.InUseBytes }},
	{"memkit_class_reserved_bytes", "Bytes the allocator holds for this size class: in use plus idle.",
		prometheus.GaugeValue, func(c *memkit.ClassStats) uint64 { return c.ReservedBytes }},
	{"memkit_class_live_objects", "Objects of this size class handed out and not yet returned." + estimateNote,
		prometheus.GaugeValue, func(c *memkit.ClassStats) uint64 { return c.LiveObjects }},
	{"memkit_class_idle_objects", "Objects of this size class held for reuse.",
		prometheus.GaugeValue, func(c *memkit.ClassStats) uint64 { return c.IdleObjects }},
	{"memkit_class_allocs_total", "Successful allocations served from this size class." + estimateNote,
		prometheus.CounterValue, func(c *memkit.ClassStats) uint64 { return c.Allocs }},
	{"memkit_class_frees_total", "Objects of this size class returned and accepted." + estimateNote,
		prometheus.CounterValue, func(c *memkit.ClassStats) uint64 { return c.Frees }},
	{"memkit_class_grows_total", "Times the allocator obtained new memory for this size class.",
		prometheus.CounterValue, func(c *memkit.ClassStats) uint64 { return c.Grows }},
	{"memkit_class_releases_total", "Objects of this size class given back to the GC or the OS.",
		prometheus.CounterValue, func(c *memkit.ClassStats) uint64 { return c.Releases }},
}

// collector is the prometheus.Collector of [New] (and of newCollector, the
// collector of one allocator the tests drive with a fake StatsSource).
type collector struct {
	descs      [len(stats)]*prometheus.Desc
	classDescs [len(classStats)]*prometheus.Desc
	classes    bool  // export the per-class series
	err        error // configuration error; every desc is invalid then

	mu     sync.Mutex         // guards the fields below and serializes Collect
	one    *source            // newCollector's allocator; nil for New
	byName map[string]*source // New: the published allocators, by name
	gen    uint64             // New: the Collect count, to forget unpublished names
}

// source is one allocator a collector exports, with what its Collects
// reuse: the snapshot and the label pairs.
type source struct {
	src        memkit.StatsSource
	values     []string         // the variable label values before class: none, or the published name
	labels     []*dto.LabelPair // of every allocator-wide series, sorted
	st         memkit.Stats     // reused by every Collect
	classLabel []classLabels    // by position in st.Classes
	gen        uint64           // New: the last Collect that found it published
}

// classLabels caches the label pairs of the series of one class size.
type classLabels struct {
	size  uint64
	pairs []*dto.LabelPair // the const labels, allocator, and class="size", sorted
}

// New returns a [prometheus.Collector] that exports the statistics of every
// allocator published with [memkit.Publish], each under the label
// allocator="name" with the name it was published under: the name the
// debug page ([memkit.Handler]) and expvar show. Allocators published or
// unpublished later appear or disappear from the next scrape on; register
// one collector for the process, not one per allocator:
//
//	memkit.Publish("rpc_buffers", pool)
//	reg.MustRegister(prom.New())
//
// The series it exports are listed below; the per-class ones
// (memkit_class_*) only with [WithClasses]. New registers
// nothing: pass the collector to a registry's Register. Invalid options
// make registration fail with an error that names the problem. Register
// one New per registry: a second would export every series twice.
//
// The collector is safe for concurrent use by multiple goroutines; scrapes
// take turns. Each Collect calls ReadStats once per published allocator,
// from the scraping goroutine while other goroutines use the allocator;
// every memkit allocator's ReadStats is safe for that, and a StatsSource of
// your own must be too (see [memkit.StatsSource]).
//
// Every series carries the label allocator, the name the allocator was
// published under. Gauges describe the present, counters (suffix _total)
// only grow; both come from one [memkit.Stats] snapshot per scrape.
//
//	memkit_in_use_bytes             gauge    bytes in objects handed out and not yet returned
//	memkit_reserved_bytes           gauge    bytes held: in use plus idle memory kept for reuse
//	memkit_live_objects             gauge    objects handed out and not yet returned
//	memkit_free_bytes               gauge    range allocators: reserved bytes free to carve from
//	memkit_largest_free_bytes       gauge    range allocators: the largest free piece
//	memkit_allocs_total             counter  successful allocations, heap fallbacks included
//	memkit_frees_total              counter  objects returned and accepted
//	memkit_heap_fallbacks_total     counter  allocations served by the Go heap instead
//	memkit_failures_total           counter  allocation attempts that failed without side effects
//	memkit_grows_total              counter  times new memory was obtained
//	memkit_releases_total           counter  times idle memory was given back
//	memkit_bad_frees_total          counter  frees rejected as not the allocator's
//
// With [WithClasses], allocators with size classes add a series per class,
// with the label class holding the class size in bytes as a decimal number
// ("4096"):
//
//	memkit_class_in_use_bytes       gauge
//	memkit_class_reserved_bytes     gauge
//	memkit_class_live_objects       gauge
//	memkit_class_idle_objects       gauge    objects of the class held for reuse
//	memkit_class_allocs_total       counter
//	memkit_class_frees_total        counter
//	memkit_class_grows_total        counter
//	memkit_class_releases_total     counter
//
// The two free-memory gauges are zero for pools; for extent and buddy,
// 1 - memkit_largest_free_bytes / memkit_free_bytes is the fragmentation
// of the free memory ([memkit.Stats.Fragmentation]).
//
// An allocator with 64 classes thus exports 12 series by default and
// 12 + 8×64 = 524 with [WithClasses], which is why they are opt-in.
//
// A Collect reads into a [memkit.Stats] the collector keeps per
// allocator, so the snapshot does not allocate after the first scrape. It takes no lock of its own beyond a mutex private to the
// collector (concurrent scrapes of one collector take turns); which locks
// ReadStats takes is the allocator's business, and memkit's allocators
// take their shard or class locks one at a time, never all at once. The
// label pairs of each class are built once and cached, and the metrics of
// one allocator's Collect share one allocation: a Collect allocates once per
// allocator, whatever the number of classes ([New] also lists the
// published allocators, a few allocations per scrape). For an allocator with 64 classes a Collect takes
// some 25–50 µs on a 2-core machine, a good part of it the 524 channel sends
// client_golang's Collector interface requires (BenchmarkCollect64Classes);
// a registry's Gather and the text encoding then cost several times that.
func New(opts ...Option) prometheus.Collector {
	cfg := config{classes: false}
	for _, o := range opts {
		o(&cfg)
	}
	c := &collector{classes: cfg.classes, byName: map[string]*source{}}
	c.init([]string{allocatorLabel}, cfg.constLabels, nil)
	return c
}

// newCollector returns a collector of src alone, under the label
// allocator="name", per-class series included unless withoutClasses is
// given: the tests' way to export a fake StatsSource without publishing
// it. An empty name, a nil src, or invalid options make registration fail
// with an error that names the problem.
func newCollector(name string, src memkit.StatsSource, opts ...Option) prometheus.Collector {
	cfg := config{classes: true}
	for _, o := range opts {
		o(&cfg)
	}
	c := &collector{classes: cfg.classes}
	var err error
	switch {
	case src == nil:
		err = errors.New("memkit/prom: nil StatsSource for allocator " + strconv.Quote(name))
	case name == "":
		err = errors.New("memkit/prom: empty allocator name")
	}
	if _, ok := cfg.constLabels[allocatorLabel]; ok {
		err = cmp.Or(err, fmt.Errorf("memkit/prom: WithConstLabels: label %q is reserved", allocatorLabel))
	}
	labels := prometheus.Labels{allocatorLabel: name}
	for k, v := range cfg.constLabels {
		if k != allocatorLabel {
			labels[k] = v
		}
	}
	c.init(nil, labels, err)
	if c.err == nil {
		c.one = &source{src: src}
		c.one.labels = prometheus.MakeLabelPairs(c.descs[0], nil)
	}
	return c
}

// init builds the descriptors: variable labels vars (before class) and
// const labels constLabels. err, or a reserved or invalid label, makes every
// descriptor invalid, so that registration fails with it.
func (c *collector) init(vars []string, constLabels prometheus.Labels, err error) {
	for k := range constLabels {
		if (k == allocatorLabel && len(vars) > 0) || k == classLabel {
			err = cmp.Or(err, fmt.Errorf("memkit/prom: WithConstLabels: label %q is reserved", k))
		}
	}
	classVars := append(slices.Clip(vars), classLabel)
	for i, s := range stats {
		c.descs[i] = prometheus.NewDesc(s.name, s.help, vars, constLabels)
	}
	for i, s := range classStats {
		c.classDescs[i] = prometheus.NewDesc(s.name, s.help, classVars, constLabels)
	}
	if err == nil {
		err = c.check(len(vars))
	}
	if c.err = err; err != nil {
		for i := range c.descs {
			c.descs[i] = prometheus.NewInvalidDesc(err)
		}
		for i := range c.classDescs {
			c.classDescs[i] = prometheus.NewInvalidDesc(err)
		}
	}
}

// check reports the first error recorded in a descriptor (an invalid label
// name or value), which a Desc keeps to itself until registration. Making a
// metric from each descriptor, with nvars variable label values, surfaces it
// now.
func (c *collector) check(nvars int) error {
	vals := make([]string, nvars+1)
	for i := range vals {
		vals[i] = "0"
	}
	for _, d := range c.descs {
		if _, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, 0, vals[:nvars]...); err != nil {
			return fmt.Errorf("memkit/prom: %w", err)
		}
	}
	for _, d := range c.classDescs {
		if _, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, 0, vals...); err != nil {
			return fmt.Errorf("memkit/prom: %w", err)
		}
	}
	return nil
}

// Describe sends the descriptor of every series the collector exports.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	if c.classes {
		for _, d := range c.classDescs {
			ch <- d
		}
	}
}

// Collect reads one snapshot of each allocator's statistics and sends a
// metric per series.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	if c.err != nil {
		ch <- prometheus.NewInvalidMetric(c.descs[0], c.err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.one != nil {
		c.collect(ch, c.one)
		return
	}
	c.gen++
	memkit.Do(func(name string, src memkit.StatsSource) {
		s := c.byName[name]
		if s == nil {
			s = &source{values: []string{name}}
			// A label value that is not UTF-8 would fail the scrape:
			// leave out the allocator rather than every series.
			if !utf8.ValidString(name) {
				return
			}
			s.labels = prometheus.MakeLabelPairs(c.descs[0], s.values)
			c.byName[name] = s
		}
		s.src, s.gen = src, c.gen
		c.collect(ch, s)
	})
	for name, s := range c.byName {
		if s.gen != c.gen {
			delete(c.byName, name) // unpublished: forget its snapshot
		}
	}
}

// collect sends the series of one allocator. c.mu must be held.
func (c *collector) collect(ch chan<- prometheus.Metric, s *source) {
	st := &s.st
	s.src.ReadStats(st)
	n := len(stats)
	if c.classes {
		n += len(st.Classes) * len(classStats)
	}
	// One allocation for every metric of this allocator in this scrape. It is
	// not reused: a caller of Collect may keep the metrics it receives.
	batch := make([]metric, n)
	k := 0
	for i := range stats {
		d := &stats[i]
		m := &batch[k]
		k++
		*m = metric{desc: c.descs[i], labels: s.labels, typ: d.typ, value: float64(d.value(st))}
		ch <- m
	}
	if !c.classes {
		return
	}
	for i := range st.Classes {
		row := &st.Classes[i]
		labels := c.classLabels(s, i, row.Size)
		for j := range classStats {
			d := &classStats[j]
			m := &batch[k]
			k++
			*m = metric{desc: c.classDescs[j], labels: labels, typ: d.typ, value: float64(d.value(row))}
			ch <- m
		}
	}
}

// classLabels returns the label pairs of the series of s's i-th class row,
// whose size is size. They are cached by position: an allocator's classes
// do not change between snapshots, so after the first Collect no label is
// built or formatted again. c.mu must be held.
func (c *collector) classLabels(s *source, i int, size uint64) []*dto.LabelPair {
	if i < len(s.classLabel) && s.classLabel[i].size == size {
		return s.classLabel[i].pairs
	}
	vals := append(slices.Clip(s.values), strconv.FormatUint(size, 10))
	l := classLabels{size, prometheus.MakeLabelPairs(c.classDescs[0], vals)}
	if i < len(s.classLabel) {
		// The class set changed (a source that folds several allocators
		// may gain a class): rebuild this position only.
		s.classLabel[i] = l
	} else {
		// Rows are visited in order, so i == len(s.classLabel) here.
		s.classLabel = append(s.classLabel, l)
	}
	return l.pairs
}

// metric is one series of one Collect: a [prometheus.Metric] that, like
// the const metrics of client_golang, holds its value and shares its label
// pairs with the other series of its class.
type metric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	typ    prometheus.ValueType
	value  float64
}

func (m *metric) Desc() *prometheus.Desc { return m.desc }

func (m *metric) Write(out *dto.Metric) error {
	out.Label = m.labels
	if m.typ == prometheus.CounterValue {
		out.Counter = &dto.Counter{Value: &m.value}
	} else {
		out.Gauge = &dto.Gauge{Value: &m.value}
	}
	return nil
}
