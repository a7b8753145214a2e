package prom_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/e2e"
	"github.com/memkit/memkit/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// e2eTimeout bounds how long the test waits for series to appear in
// Prometheus.
const e2eTimeout = 60 * time.Second

// A real Prometheus server scrapes a memkit collector over an allocator in
// use, and its query API returns the series with non-zero values; every
// expression of the Grafana dashboard runs on it and returns data.
func TestE2E_PrometheusScrapes(t *testing.T) {
	bin := e2e.PrometheusBinary(t)

	pool, err := bytepool.New(bytepool.WithExactStats()) // every Get and Put counted, for the figures below
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, pool)
	// A range allocator with free memory in several ranges, for the
	// dashboard's free-memory and fragmentation panels.
	ranges, err := extent.NewShared()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		b := ranges.Malloc(1000 * (i + 1))
		if i%2 == 0 {
			ranges.Free(b)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		prom.NewCollector("e2e", pool),
		prom.NewCollector("e2e_extent", ranges),
		collectors.NewGoCollector(),
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: testLogger{t}}))
	target := httptest.NewServer(mux) // on 127.0.0.1
	t.Cleanup(target.Close)

	p := e2e.StartPrometheus(t, bin, target.URL+"/metrics")
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()

	allocs := p.WaitFor(ctx, t, `memkit_allocs_total{allocator="e2e"}`, e2e.Positive)
	t.Logf("Prometheus has %v", allocs)
	p.WaitFor(ctx, t, `rate(memkit_allocs_total{allocator="e2e"}[10s])`, e2e.Positive)
	p.WaitFor(ctx, t, `sum(memkit_class_allocs_total{allocator="e2e"})`, e2e.Positive)

	// The dashboard's expressions, with its variables set to match all.
	vars := strings.NewReplacer(`$__rate_interval`, `10s`, `$allocator`, `.*`, `$instance`, `.*`)
	labelValues := regexp.MustCompile(`^label_values\((.+), *[a-z_]+\)$`)
	exprs := loadDashboard(t).exprs()
	for _, where := range slices.Sorted(maps.Keys(exprs)) {
		expr := exprs[where]
		if m := labelValues.FindStringSubmatch(expr); m != nil {
			expr = m[1] // a variable's query: its selector must match series
		}
		p.WaitFor(ctx, t, vars.Replace(expr), func(r []e2e.Sample) bool { return len(r) > 0 })
		t.Logf("dashboard %s: ok", where)
	}
}

// exercise keeps pool busy until the test ends: a burst of Gets and Puts
// of assorted sizes every few milliseconds, with some buffers held live.
func exercise(t *testing.T, pool *bytepool.Pool) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(1, 2))
		held := make([][]byte, 64)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				for _, b := range held {
					if b != nil {
						pool.Put(b)
					}
				}
				return
			case <-tick.C:
			}
			for range 32 {
				i := rng.IntN(len(held))
				if held[i] != nil {
					pool.Put(held[i])
				}
				held[i] = pool.Get(1 + rng.IntN(64<<10))
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
}

// testLogger sends promhttp's error log to the test log.
type testLogger struct{ t *testing.T }

func (l testLogger) Println(v ...any) { l.t.Log(v...) }
