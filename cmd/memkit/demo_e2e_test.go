package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memkit/memkit/internal/e2e"
)

// TestDemo_PrometheusScrapes points a real Prometheus server at a running
// memkit demo and waits until the series of every allocator the demo
// publishes appear with non-zero values, as an operator's would.
func TestDemo_PrometheusScrapes(t *testing.T) {
	bin := e2e.PrometheusBinary(t)
	listen := e2e.FreeLoopbackAddr(t)
	var stdout, stderr e2e.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(&stdout, &stderr, []string{"demo", "ingest", "--duration", "24s", "--rate", "500", "--conns", "4", "--listen", listen})
	}()
	// The demo prints its addresses once /metrics is being served.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "metrics:") {
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not start serving /metrics:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := fmt.Sprintf("metrics:    http://%s/metrics", listen)
	if !strings.Contains(stderr.String(), want) {
		t.Fatalf("the demo printed %q; want %q", stderr.String(), want)
	}

	p := e2e.StartPrometheus(t, bin, "http://"+listen+"/metrics")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, q := range []string{
		`memkit_allocs_total{allocator="demo.bodies"}`,
		`memkit_allocs_total{allocator="demo.arenas"}`,
		`memkit_allocs_total{allocator="demo.audit"}`,
		`memkit_reserved_bytes{allocator="demo.bodies"}`,
		// bytepool.Default counts Gets from a sample and buffer.Get's idle
		// headers keep their storage, so its allocs may stay 0 in a short
		// run; the storage it had to make shows as grows.
		`sum(memkit_class_grows_total{allocator="bytepool.default"})`,
	} {
		r := p.WaitFor(ctx, t, q, e2e.Positive)
		t.Logf("%s = %v", q, r[0].Value)
	}
	if err := <-done; err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "responses differing") {
		t.Fatalf("the demo printed no comparison:\n%s", stdout.String())
	}
}
