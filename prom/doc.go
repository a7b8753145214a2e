// Package prom exports the statistics of memkit allocators as Prometheus
// metrics. Pick it when Prometheus scrapes your program; without
// Prometheus, the root package's debug page ([memkit.Handler]) and expvar
// show the same statistics with no dependency. It is a module of its own,
// so that only programs that import it link client_golang.
//
// memkit has one registry of allocators: [memkit.Publish]. The debug page
// ([memkit.Handler]) and expvar show what is published there, and so does
// the one collector of this package, [New], under the same names: publish
// each allocator once, register New once, and every published allocator
// is exported, including those published later. This package never
// registers anything globally.
//
//	memkit.Publish("rpc_buffers", pool)
//	memkit.Publish("sessions", shared) // a slab.Shared
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(
//		prom.New(),
//		collectors.NewGoCollector(), // GC cycles, for the dashboard
//	)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// # Metrics
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
// # Cost of a scrape
//
// Collect calls each allocator's ReadStats once, from the scraping
// goroutine while the allocator's users go on: every memkit allocator's
// ReadStats is safe for that, and a [memkit.StatsSource] of your own must
// be too. It reads into a [memkit.Stats] the collector keeps per
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
//
// # Dashboard
//
// The module ships a Grafana dashboard in dashboards/memkit.json that charts
// these series beside the Go collector's GC cycles; its tests check that it
// queries only series this package and [collectors.NewGoCollector] emit.
package prom
