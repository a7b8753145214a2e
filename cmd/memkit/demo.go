package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	memkitprom "github.com/memkit/memkit/prom"
)

const demoUsage = `usage: memkit demo [flags]

Runs one HTTP JSON service twice on loopback — once on plain make, new,
bytes.Buffer and encoding/json, once on memkit (buffer.FixedPool for request
bodies, arena.Pool for per-request objects, buffer.JSON for responses, a
ringbuf for audit records) — drives each at the same fixed request rate with
a built-in load generator, checks that both send the same bytes for every
request, and prints side by side: requests/s, latency percentiles, GC
cycles, GC pause, heap allocations per request and peak heap.

While it runs it serves Prometheus metrics at /metrics and memkit's debug
page at /debug/memkit/ on --listen, and prints both addresses.

flags:
`

// demoConfig is the parsed command line of memkit demo.
type demoConfig struct {
	duration time.Duration
	requests int
	rate     int
	conns    int
	lines    int
	listen   string
	json     bool
}

func parseDemoFlags(stdout io.Writer, args []string) (*demoConfig, error) {
	fs := flag.NewFlagSet("memkit demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := new(demoConfig)
	fs.DurationVar(&c.duration, "duration", 30*time.Second, "total `duration` of the run, shared by the two services")
	fs.IntVar(&c.requests, "requests", 0, "stop each service's measured part after `n` requests (0: only --duration bounds it)")
	fs.IntVar(&c.rate, "rate", 2000, "fixed request `rate` per second sent to each service")
	fs.IntVar(&c.conns, "conns", 8, "keep-alive `connections` the load generator spreads the rate over")
	fs.IntVar(&c.lines, "readings", 400, "readings (lines) per request `body`")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:0", "`address` serving /metrics and /debug/memkit/ during the run")
	fs.BoolVar(&c.json, "json", false, "print the comparison as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, demoUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil, err
		}
		return nil, usageError{err.Error()}
	}
	switch {
	case fs.NArg() > 0:
		return nil, usagef("demo: unexpected argument %q", fs.Arg(0))
	case c.duration < 2*time.Second:
		return nil, usagef("demo: --duration %v: must be at least 2s", c.duration)
	case c.requests < 0:
		return nil, usagef("demo: --requests %d: must not be negative", c.requests)
	case c.rate < 1:
		return nil, usagef("demo: --rate %d: must be at least 1", c.rate)
	case c.conns < 1 || c.conns > c.rate:
		return nil, usagef("demo: --conns %d: must be between 1 and --rate", c.conns)
	case c.lines < 1 || c.lines > 2000:
		return nil, usagef("demo: --readings %d: must be between 1 and 2000", c.lines)
	}
	return c, nil
}

// demoPhase is one service's measured run.
type demoPhase struct {
	Service          string  `json:"service"`
	Requests         uint64  `json:"requests"`
	RequestsPerSec   float64 `json:"requests_per_sec"`
	P50              float64 `json:"p50_us"`
	P99              float64 `json:"p99_us"`
	P999             float64 `json:"p999_us"`
	GCCycles         uint32  `json:"gc_cycles"`
	GCPer10k         float64 `json:"gc_cycles_per_10k_requests"`
	GCPause          float64 `json:"gc_pause_total_us"`
	AllocsPerRequest float64 `json:"heap_allocs_per_request"`
	BytesPerRequest  float64 `json:"heap_bytes_per_request"`
	PeakHeap         uint64  `json:"peak_heap_bytes"`
	Mismatches       uint64  `json:"mismatched_responses"`
	Errors           uint64  `json:"errors"`
}

// demoReport is the whole comparison, as --json prints it.
type demoReport struct {
	Machine    string    `json:"machine"`
	Rate       int       `json:"rate"`
	Conns      int       `json:"conns"`
	Readings   int       `json:"readings_per_request"`
	PerService string    `json:"measured_per_service"`
	Plain      demoPhase `json:"plain"`
	Memkit     demoPhase `json:"memkit"`
}

func runDemo(stdout, stderr io.Writer, args []string) error {
	cfg, err := parseDemoFlags(stdout, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	plain := newPlainService(ctx)
	mk, err := newMemkitService(ctx, cfg.conns)
	if err != nil {
		return err
	}

	// Observability: the memkit service's allocators, published for the
	// debug page and collected for Prometheus.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, a := range []struct {
		name string
		src  memkit.StatsSource
	}{
		{"demo_bodies", mk.bodies},
		{"demo_arenas", mk.arenas},
		{"demo_audit", mk.audit},
		{"bytepool_default", bytepool.Default()},
	} {
		reg.MustRegister(memkitprom.NewCollector(a.name, a.src))
		if memkit.Lookup("memkit.demo."+a.name) == nil {
			memkit.Publish("memkit.demo."+a.name, a.src)
			defer memkit.Unpublish("memkit.demo." + a.name)
		}
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("demo: --listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/debug/memkit/", memkit.Handler())
	obs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go obs.Serve(ln)
	defer obs.Close()
	fmt.Fprintf(stderr, "metrics:    http://%s/metrics\ndebug page: http://%s/debug/memkit/\n", ln.Addr(), ln.Addr())

	// Requests, and the bytes every response must be: the plain service's
	// answer, computed once through a recorder.
	bodies := demoBodies(64, cfg.lines)
	reqs := make([][]byte, len(bodies))
	want := make([][]byte, len(bodies))
	for i, b := range bodies {
		path := fmt.Sprintf("/ingest?device=sensor-%02d", i)
		reqs[i] = encodeRequest(path, b)
		rec := httptest.NewRecorder()
		plain.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(string(b))))
		if rec.Code != http.StatusOK {
			return fmt.Errorf("demo: reference response %d: %s", rec.Code, rec.Body)
		}
		want[i] = rec.Body.Bytes()
	}

	// Each service gets half the run: a warm-up, then the measured part.
	half := cfg.duration / 2
	warm := min(half/5, 2*time.Second)
	rep := demoReport{
		Machine: fmt.Sprintf("%s, %s, GOMAXPROCS=%d", versionLine(), cpuModel(), runtime.GOMAXPROCS(0)),
		Rate:    cfg.rate, Conns: cfg.conns, Readings: cfg.lines,
		PerService: (half - warm).String(),
	}
	for _, p := range []struct {
		name string
		h    http.Handler
		out  *demoPhase
	}{{"plain", plain, &rep.Plain}, {"memkit", mk, &rep.Memkit}} {
		fmt.Fprintf(stderr, "running %s service: %v warm-up, %v measured at %d req/s...\n", p.name, warm, half-warm, cfg.rate)
		ph, err := runPhase(p.h, cfg, warm, half-warm, reqs, want)
		if err != nil {
			return fmt.Errorf("demo: %s service: %w", p.name, err)
		}
		ph.Service = p.name
		*p.out = *ph
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(&rep)
	}
	printDemo(stdout, &rep)
	if n := rep.Plain.Mismatches + rep.Memkit.Mismatches; n > 0 {
		return fmt.Errorf("demo: %d responses differed from the reference", n)
	}
	return nil
}

// runPhase serves h on loopback, warms it up, then measures it.
func runPhase(h http.Handler, cfg *demoConfig, warm, d time.Duration, reqs, want [][]byte) (*demoPhase, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	addr := ln.Addr().String()

	if r := drive(addr, cfg.rate, cfg.conns, warm, 0, reqs, want); r.firstErr != nil {
		return nil, r.firstErr
	}
	w := startGCWatch()
	r := drive(addr, cfg.rate, cfg.conns, d, cfg.requests, reqs, want)
	w.finish()
	if r.firstErr != nil {
		return nil, r.firstErr
	}
	if r.requests == 0 {
		return nil, errors.New("no request completed")
	}
	n := float64(r.requests)
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	return &demoPhase{
		Requests:         r.requests,
		RequestsPerSec:   n / r.elapsed.Seconds(),
		P50:              us(r.lat.quantile(0.50)),
		P99:              us(r.lat.quantile(0.99)),
		P999:             us(r.lat.quantile(0.999)),
		GCCycles:         w.gcCycles(),
		GCPer10k:         float64(w.gcCycles()) * 1e4 / n,
		GCPause:          us(w.pause()),
		AllocsPerRequest: float64(w.mallocs()) / n,
		BytesPerRequest:  float64(w.allocBytes()) / n,
		PeakHeap:         w.peak,
		Mismatches:       r.mismatches,
		Errors:           r.errors,
	}, nil
}

// printDemo prints the two phases side by side with memkit's ratio.
func printDemo(w io.Writer, r *demoReport) {
	fmt.Fprintf(w, "memkit demo: %d req/s over %d connections, %d readings per request, %s measured per service\n",
		r.Rate, r.Conns, r.Readings, r.PerService)
	fmt.Fprintf(w, "%s\n\n", r.Machine)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tplain\tmemkit\tmemkit/plain\t")
	row := func(name string, p, m float64, format string) {
		ratio := "-"
		if p != 0 {
			ratio = fmt.Sprintf("%.3f", m/p)
		}
		fmt.Fprintf(tw, "%s\t"+format+"\t"+format+"\t%s\t\n", name, p, m, ratio)
	}
	pl, mk := &r.Plain, &r.Memkit
	row("requests", float64(pl.Requests), float64(mk.Requests), "%.0f")
	row("requests/s", pl.RequestsPerSec, mk.RequestsPerSec, "%.1f")
	row("p50 latency µs", pl.P50, mk.P50, "%.1f")
	row("p99 latency µs", pl.P99, mk.P99, "%.1f")
	row("p99.9 latency µs", pl.P999, mk.P999, "%.1f")
	row("GC cycles", float64(pl.GCCycles), float64(mk.GCCycles), "%.0f")
	row("GC cycles per 10k requests", pl.GCPer10k, mk.GCPer10k, "%.2f")
	row("GC pause total µs", pl.GCPause, mk.GCPause, "%.0f")
	row("heap allocs per request", pl.AllocsPerRequest, mk.AllocsPerRequest, "%.1f")
	row("heap bytes per request", pl.BytesPerRequest, mk.BytesPerRequest, "%.0f")
	row("peak heap bytes", float64(pl.PeakHeap), float64(mk.PeakHeap), "%.0f")
	row("responses differing", float64(pl.Mismatches), float64(mk.Mismatches), "%.0f")
	tw.Flush()
	fmt.Fprintf(w, "\nEvery response was compared byte for byte with the reference answer.\n")
}
