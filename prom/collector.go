package memkitprom

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

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

var stats = [...]stat{
	{"memkit_in_use_bytes", "Bytes in objects the allocator handed out and has not taken back, counted at the capacity it reserved for them.",
		prometheus.GaugeValue, func(s *memkit.Stats) uint64 { return s.InUseBytes }},
	{"memkit_reserved_bytes", "Bytes the allocator holds: in use plus idle memory kept for reuse. Memory already given back to the GC or the OS is not counted.",
		prometheus.GaugeValue, func(s *memkit.Stats) uint64 { return s.ReservedBytes }},
	{"memkit_live_objects", "Objects the allocator handed out and has not taken back.",
		prometheus.GaugeValue, func(s *memkit.Stats) uint64 { return s.LiveObjects }},
	{"memkit_free_bytes", "Reserved bytes a range allocator (extent, buddy) can carve allocations from: reserved less in use. Zero for pools.",
		prometheus.GaugeValue, func(s *memkit.Stats) uint64 { return s.FreeBytes }},
	{"memkit_largest_free_bytes", "The largest piece of free memory of a range allocator: the largest request it serves without new memory. 1 - this / memkit_free_bytes is the fragmentation. Zero for pools.",
		prometheus.GaugeValue, func(s *memkit.Stats) uint64 { return s.LargestFree }},
	{"memkit_allocs_total", "Successful allocations, heap fallbacks included.",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.Allocs }},
	{"memkit_frees_total", "Objects returned to the allocator and accepted.",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.Frees }},
	{"memkit_heap_fallbacks_total", "Allocations served by the Go heap instead of the allocator's own memory: sizes above the largest class, or requests made while a budget was exhausted.",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.HeapFallbacks }},
	{"memkit_failures_total", "Allocation attempts that failed without side effects (TryAlloc-style calls that returned false or ErrNoSpace).",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.Failures }},
	{"memkit_grows_total", "Times the allocator obtained new memory (a buffer from the heap, a slab, a chunk).",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.Grows }},
	{"memkit_releases_total", "Times the allocator gave idle memory back to the GC or the OS.",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.Releases }},
	{"memkit_bad_frees_total", "Frees the allocator rejected: memory it did not hand out, or a slice whose start or capacity changed. Rejected memory is left to the GC.",
		prometheus.CounterValue, func(s *memkit.Stats) uint64 { return s.BadFrees }},
}

var classStats = [...]classStat{
	{"memkit_class_in_use_bytes", "Bytes in objects of this size class handed out and not yet returned.",
		prometheus.GaugeValue, func(c *memkit.ClassStats) uint64 { return c.InUseBytes }},
	{"memkit_class_reserved_bytes", "Bytes the allocator holds for this size class: in use plus idle.",
		prometheus.GaugeValue, func(c *memkit.ClassStats) uint64 { return c.ReservedBytes }},
	{"memkit_class_live_objects", "Objects of this size class handed out and not yet returned.",
		prometheus.GaugeValue, func(c *memkit.ClassStats) uint64 { return c.LiveObjects }},
	{"memkit_class_idle_objects", "Objects of this size class held for reuse.",
		prometheus.GaugeValue, func(c *memkit.ClassStats) uint64 { return c.IdleObjects }},
	{"memkit_class_allocs_total", "Successful allocations served from this size class.",
		prometheus.CounterValue, func(c *memkit.ClassStats) uint64 { return c.Allocs }},
	{"memkit_class_frees_total", "Objects of this size class returned and accepted.",
		prometheus.CounterValue, func(c *memkit.ClassStats) uint64 { return c.Frees }},
	{"memkit_class_grows_total", "Times the allocator obtained new memory for this size class.",
		prometheus.CounterValue, func(c *memkit.ClassStats) uint64 { return c.Grows }},
	{"memkit_class_releases_total", "Objects of this size class given back to the GC or the OS.",
		prometheus.CounterValue, func(c *memkit.ClassStats) uint64 { return c.Releases }},
}

// collector is the prometheus.Collector NewCollector returns.
type collector struct {
	descs      [len(stats)]*prometheus.Desc
	classDescs [len(classStats)]*prometheus.Desc
	labels     []*dto.LabelPair // of every allocator-wide series, sorted
	classes    bool             // export the per-class series
	err        error            // configuration error; every desc is invalid then

	mu         sync.Mutex // guards the fields below and serializes Collect
	src        memkit.StatsSource
	st         memkit.Stats  // reused by every Collect
	classLabel []classLabels // by position in st.Classes
}

// classLabels caches the label pairs of the series of one class size.
type classLabels struct {
	size  uint64
	pairs []*dto.LabelPair // the const labels and class="size", sorted
}

// NewCollector returns a [prometheus.Collector] that exports the statistics
// of src, an allocator, under the label allocator="name". It works for
// every memkit allocator and for any other [memkit.StatsSource]; the
// series it exports are listed in the package documentation.
//
// NewCollector registers nothing: pass the collector to a registry's
// Register. Collectors for several allocators can share a registry as long
// as their names (or the values of [WithConstLabels] labels) differ;
// registering a second collector with the same name and labels fails. An
// empty name, a nil src, or invalid options make registration fail with an
// error that names the problem.
//
// The collector is safe for concurrent use by multiple goroutines; scrapes
// of one collector run one at a time. Its descriptors are built once, here.
// Each Collect calls src.ReadStats once, into a [memkit.Stats] the
// collector reuses, and takes no lock but a mutex of the collector's own;
// src must therefore be safe to read while other goroutines use it
// (memkit's goroutine-safe allocators are; wrap the others, such as
// slab.Arena, in a StatsSource that holds the lock their users hold).
// After the first Collect, a Collect allocates once, whatever the number
// of classes: the metrics it sends share one block, and their label pairs
// are built once per class and reused.
func NewCollector(name string, src memkit.StatsSource, opts ...Option) prometheus.Collector {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	c := &collector{src: src, classes: !cfg.noClasses}

	labels := prometheus.Labels{allocatorLabel: name}
	for k, v := range cfg.constLabels {
		if k == allocatorLabel || k == classLabel {
			c.err = fmt.Errorf("memkitprom: WithConstLabels: label %q is reserved", k)
		}
		labels[k] = v
	}
	switch {
	case src == nil:
		c.err = errors.New("memkitprom: nil StatsSource for allocator " + strconv.Quote(name))
	case name == "":
		c.err = errors.New("memkitprom: empty allocator name")
	}

	for i, s := range stats {
		c.descs[i] = prometheus.NewDesc(s.name, s.help, nil, labels)
	}
	for i, s := range classStats {
		c.classDescs[i] = prometheus.NewDesc(s.name, s.help, []string{classLabel}, labels)
	}
	if c.err == nil {
		c.err = c.check()
	}
	if c.err != nil {
		for i := range c.descs {
			c.descs[i] = prometheus.NewInvalidDesc(c.err)
		}
		for i := range c.classDescs {
			c.classDescs[i] = prometheus.NewInvalidDesc(c.err)
		}
		return c
	}
	c.labels = prometheus.MakeLabelPairs(c.descs[0], nil)
	return c
}

// check reports the first error recorded in a descriptor (an invalid label
// name or value), which a Desc keeps to itself until registration. Making a
// metric from each descriptor surfaces it now.
func (c *collector) check() error {
	for _, d := range c.descs {
		if _, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, 0); err != nil {
			return fmt.Errorf("memkitprom: %w", err)
		}
	}
	for _, d := range c.classDescs {
		if _, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, 0, "0"); err != nil {
			return fmt.Errorf("memkitprom: %w", err)
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

// Collect reads one snapshot of the allocator's statistics and sends a
// metric per series.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	if c.err != nil {
		ch <- prometheus.NewInvalidMetric(c.descs[0], c.err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.st
	c.src.ReadStats(st)

	n := len(stats)
	if c.classes {
		n += len(st.Classes) * len(classStats)
	}
	// One block for every metric of this scrape. It is not reused: a
	// caller of Collect may keep the metrics it receives.
	batch := make([]metric, n)
	k := 0
	for i := range stats {
		s := &stats[i]
		m := &batch[k]
		k++
		*m = metric{desc: c.descs[i], labels: c.labels, typ: s.typ, value: float64(s.value(st))}
		ch <- m
	}
	if !c.classes {
		return
	}
	for i := range st.Classes {
		row := &st.Classes[i]
		labels := c.classLabels(i, row.Size)
		for j := range classStats {
			s := &classStats[j]
			m := &batch[k]
			k++
			*m = metric{desc: c.classDescs[j], labels: labels, typ: s.typ, value: float64(s.value(row))}
			ch <- m
		}
	}
}

// classLabels returns the label pairs of the series of the i-th class row,
// whose size is size. They are cached by position: an allocator's classes
// do not change between snapshots, so after the first Collect no label is
// built or formatted again. c.mu must be held.
func (c *collector) classLabels(i int, size uint64) []*dto.LabelPair {
	if i < len(c.classLabel) && c.classLabel[i].size == size {
		return c.classLabel[i].pairs
	}
	l := classLabels{size, prometheus.MakeLabelPairs(c.classDescs[0], []string{strconv.FormatUint(size, 10)})}
	if i < len(c.classLabel) {
		// The class set changed (a source that folds several allocators
		// may gain a class): rebuild this position only.
		c.classLabel[i] = l
	} else {
		// Rows are visited in order, so i == len(c.classLabel) here.
		c.classLabel = append(c.classLabel, l)
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
