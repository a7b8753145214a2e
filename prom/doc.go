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
// [New] lists the series it exports and what a scrape costs. The module
// ships a Grafana dashboard, dashboards/memkit.json, that charts them
// beside the Go collector's GC cycles; its tests check that it queries only
// series this package and [collectors.NewGoCollector] emit.
package prom
