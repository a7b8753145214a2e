package prom_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Publish each allocator once, under the name the debug page shows, and
// register one collector for all of them next to the Go collector.
func ExampleNew() {
	pool, err := bytepool.New(bytepool.WithExactStats())
	if err != nil {
		panic(err)
	}
	memkit.Publish("rpc_buffers", pool)
	defer memkit.Unpublish("rpc_buffers")

	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.New(), collectors.NewGoCollector())
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/debug/memkit/", memkit.Handler()) // the same names
	srv := httptest.NewServer(mux)                 // in a program: http.ListenAndServe
	defer srv.Close()

	held := pool.Get(1000)
	defer pool.Put(held)

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "memkit_live_objects") || strings.HasPrefix(line, "memkit_class_") {
			fmt.Println(line) // no memkit_class_ series without prom.WithClasses
		}
	}
	// Output:
	// memkit_live_objects{allocator="rpc_buffers"} 1
}

// Const labels add what every series of the process shares; the published
// names tell the allocators apart.
func ExampleWithConstLabels() {
	for _, tenant := range []string{"acme", "globex"} {
		pool, err := bytepool.New(bytepool.WithExactStats())
		if err != nil {
			panic(err)
		}
		pool.Put(pool.Get(100))
		memkit.Publish("uploads_"+tenant, pool)
		defer memkit.Unpublish("uploads_" + tenant)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.New(prom.WithConstLabels(prometheus.Labels{"region": "eu"})))
	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "memkit_frees_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				fmt.Printf("%s=%s ", l.GetName(), l.GetValue())
			}
			fmt.Println(m.GetCounter().GetValue())
		}
	}
	// Output:
	// allocator=uploads_acme region=eu 1
	// allocator=uploads_globex region=eu 1
}
