package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/prom"
	"github.com/memkit/memkit/stats"
)

const ingestUsage = `usage: memkit demo ingest [flags]

The demo's second scenario, where memkit does NOT pay: careful standard-
library code ties with memkit on every row. It runs one HTTP JSON service
three times on loopback, drives each at the same fixed request rate with a
built-in open-loop load generator (latency counted from each request's due
time; a warning when a service did not reach the rate), checks that all
three send the same bytes for every request, and prints side by side:
measured time, requests/s, latency percentiles, GC cycles, GC pause, heap
allocations per request and peak heap. The three services:

  naive   the service as first written: a struct per reading, strings.Split,
          fmt.Sprintf, a new bytes.Buffer per answer. A reference only.
  stdlib  the same service written with care on the standard library: a
          sync.Pool of scratch (bytes.Buffer, value slices, a json.Encoder),
          bytes.Cut. memkit's ratios are measured against this one.
  memkit  the service on memkit: buffer.FixedPool for request bodies,
          arena.Pool for per-request objects, buffer.JSON for answers, a
          ringbuf for audit records.

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
	fs := flag.NewFlagSet("memkit demo ingest", flag.ContinueOnError)
	c := new(demoConfig)
	fs.DurationVar(&c.duration, "duration", 30*time.Second, "total `duration` of the run, shared by the three services")
	fs.IntVar(&c.requests, "requests", 0, "stop each service's measured part after `n` requests (0: only --duration bounds it)")
	fs.IntVar(&c.rate, "rate", 2000, "fixed request `rate` per second sent to each service")
	fs.IntVar(&c.conns, "conns", 8, "keep-alive `connections` the load generator spreads the rate over")
	fs.IntVar(&c.lines, "readings", 400, "readings (lines) per request `body`")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:0", "`address` serving /metrics and /debug/memkit/ during the run")
	fs.BoolVar(&c.json, "json", false, "print the comparison as JSON")
	if err := parseFlags(fs, stdout, ingestUsage, args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, usagef("demo ingest: unexpected argument %q", fs.Arg(0))
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

// demoPhase is one service's measured run. Latencies are the upper bounds
// of latencyHist buckets, in microseconds.
type demoPhase struct {
	Service        string  `json:"service"`
	Measured       float64 `json:"measured_seconds"` // wall time of the measured part
	Requests       uint64  `json:"requests"`
	RequestsPerSec float64 `json:"requests_per_sec"`
	P50            float64 `json:"p50_us"`
	P99            float64 `json:"p99_us"`
	P999           float64 `json:"p999_us"`
	GCCycles       uint32  `json:"gc_cycles"`
	GCPer10k       float64 `json:"gc_cycles_per_10k_requests"`
	GCPause        float64 `json:"gc_pause_total_us"`
	// CPUPerRequest is the process's CPU time (user and system, the load
	// generator's included) over the measured part, per request, in µs;
	// 0 where the system does not report it.
	CPUPerRequest    float64 `json:"cpu_us_per_request"`
	AllocsPerRequest float64 `json:"heap_allocs_per_request"`
	BytesPerRequest  float64 `json:"heap_bytes_per_request"`
	PeakHeap         uint64  `json:"peak_heap_bytes"`
	Mismatches       uint64  `json:"mismatched_responses"`
	Errors           uint64  `json:"errors"`
	// Unsent counts requests due in the measured part that the load
	// generator never sent, the service being too far behind.
	Unsent uint64 `json:"unsent_requests"`
	// Warning is set when the service did not reach the request rate.
	Warning string `json:"warning,omitempty"`
	// FewGCs is set when the phase saw fewer than minGCCycles GC cycles:
	// its GC figures are then ±1 cycle, 10% or more, and mean little.
	FewGCs bool `json:"too_few_gc_cycles,omitempty"`
}

// minGCCycles is the fewest GC cycles a phase must see for its GC figures
// (cycles per 10k requests, pause) to be quoted: below it, one cycle more
// or less is 10% or more.
const minGCCycles = 10

// demoReport is the whole comparison, as --json prints it.
type demoReport struct {
	Machine  string `json:"machine"`
	Rate     int    `json:"rate"`
	Conns    int    `json:"conns"`
	Readings int    `json:"readings_per_request"`
	// Warmup and Budget are each service's warm-up and the most its
	// measured part may take; --requests can end it sooner (see each
	// phase's Measured).
	Warmup string    `json:"warmup_per_service"`
	Budget string    `json:"measure_budget_per_service"`
	Naive  demoPhase `json:"naive"`
	Stdlib demoPhase `json:"stdlib"`
	Memkit demoPhase `json:"memkit"`
}

// phases returns the report's phases in column order.
func (r *demoReport) phases() []*demoPhase { return []*demoPhase{&r.Naive, &r.Stdlib, &r.Memkit} }

// runIngestDemo is memkit demo ingest.
func runIngestDemo(stdout, stderr io.Writer, args []string) error {
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
	std := newStdlibService(ctx)
	mk, err := newMemkitService(ctx, cfg.conns)
	if err != nil {
		return err
	}

	// Observability: the memkit service's allocators, published once, under
	// the names both the debug page and Prometheus show.
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.New(prom.WithClasses()),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, a := range []struct {
		name string
		src  memkit.StatsSource
	}{
		{"demo.bodies", mk.bodies},
		{"demo.arenas", mk.arenas},
		{"demo.audit", mk.audit},
		{"bytepool.default", bytepool.Default()},
	} {
		if memkit.Lookup(a.name) == nil {
			memkit.Publish(a.name, a.src)
			defer memkit.Unpublish(a.name)
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

	// Each service gets a third of the run: a warm-up, then the measured
	// part.
	third := cfg.duration / 3
	warm := min(third/5, 2*time.Second)
	rep := demoReport{
		Machine: fmt.Sprintf("%s, %s, GOMAXPROCS=%d", versionLine(), cpuModel(), runtime.GOMAXPROCS(0)),
		Rate:    cfg.rate, Conns: cfg.conns, Readings: cfg.lines,
		Warmup: warm.String(), Budget: (third - warm).String(),
	}
	for _, p := range []struct {
		name string
		h    http.Handler
		out  *demoPhase
	}{{"naive", plain, &rep.Naive}, {"stdlib", std, &rep.Stdlib}, {"memkit", mk, &rep.Memkit}} {
		what := fmt.Sprintf("%v measured", third-warm)
		if cfg.requests > 0 {
			what = fmt.Sprintf("%d requests measured (at most %v)", cfg.requests, third-warm)
		}
		fmt.Fprintf(stderr, "running %s service: %v warm-up, %s at %d req/s...\n", p.name, warm, what, cfg.rate)
		ph, err := runPhase(p.h, cfg, warm, third-warm, reqs, want)
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
	var n uint64
	for _, p := range rep.phases() {
		n += p.Mismatches
	}
	if n > 0 {
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
		Measured:         r.elapsed.Seconds(),
		Requests:         r.requests,
		RequestsPerSec:   n / r.elapsed.Seconds(),
		P50:              us(r.lat.quantile(0.50)),
		P99:              us(r.lat.quantile(0.99)),
		P999:             us(r.lat.quantile(0.999)),
		GCCycles:         w.gcCycles(),
		GCPer10k:         float64(w.gcCycles()) * 1e4 / n,
		GCPause:          us(w.pause()),
		CPUPerRequest:    us(w.cpu) / n,
		AllocsPerRequest: float64(w.mallocs()) / n,
		BytesPerRequest:  float64(w.allocBytes()) / n,
		PeakHeap:         w.peak,
		Mismatches:       r.mismatches,
		Errors:           r.errors,
		Unsent:           r.missed,
		Warning:          rateShortfall("the service", n/r.elapsed.Seconds(), cfg.rate, r.missed),
		FewGCs:           w.gcCycles() < minGCCycles,
	}, nil
}

// printDemo prints the three phases side by side with memkit's ratios to
// the careful standard-library service and, for reference, to the naive one.
func printDemo(w io.Writer, r *demoReport) {
	fmt.Fprintf(w, "memkit demo ingest: where careful code ties. %d req/s over %d connections, %d readings per request, %s warm-up per service\n",
		r.Rate, r.Conns, r.Readings, r.Warmup)
	fmt.Fprintf(w, "%s\n\n", r.Machine)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tnaive (ref.)\tstdlib\tmemkit\tmemkit/stdlib\tmemkit/naive\t")
	nv, st, mk := &r.Naive, &r.Stdlib, &r.Memkit
	// row prints one figure of the three phases, formatted by f, and
	// memkit's ratios to the other two when ratios is set.
	row := func(name string, get func(*demoPhase) float64, f func(float64) string, ratios bool) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t", name, f(get(nv)), f(get(st)), f(get(mk)))
		for _, base := range []*demoPhase{st, nv} {
			ratio := "-"
			if b := get(base); ratios && b != 0 {
				ratio = fmt.Sprintf("%.2f", get(mk)/b)
			}
			fmt.Fprintf(tw, "%s\t", ratio)
		}
		fmt.Fprintln(tw)
	}
	fixed := func(prec int) func(float64) string {
		return func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	}
	row("measured time", func(p *demoPhase) float64 { return p.Measured }, func(v float64) string { return fmt.Sprintf("%.2fs", v) }, false)
	row("requests", func(p *demoPhase) float64 { return float64(p.Requests) }, fixed(0), false)
	row("requests/s", func(p *demoPhase) float64 { return p.RequestsPerSec }, fixed(1), true)
	row("p50 latency", func(p *demoPhase) float64 { return p.P50 }, formatMicros, true)
	row("p99 latency", func(p *demoPhase) float64 { return p.P99 }, formatMicros, true)
	row("p99.9 latency", func(p *demoPhase) float64 { return p.P999 }, formatMicros, true)
	row("CPU per request", func(p *demoPhase) float64 { return p.CPUPerRequest }, formatMicros, true)
	row("GC cycles", func(p *demoPhase) float64 { return float64(p.GCCycles) }, fixed(0), true)
	row("GC cycles per 10k requests", func(p *demoPhase) float64 { return p.GCPer10k }, fixed(2), true)
	row("GC pause total", func(p *demoPhase) float64 { return p.GCPause }, formatMicros, true)
	row("heap allocs per request", func(p *demoPhase) float64 { return p.AllocsPerRequest }, fixed(1), true)
	row("heap bytes per request", func(p *demoPhase) float64 { return p.BytesPerRequest }, fixed(0), true)
	row("peak heap", func(p *demoPhase) float64 { return float64(p.PeakHeap) },
		func(v float64) string { return stats.FormatBytes(uint64(v)) }, true)
	row("responses differing", func(p *demoPhase) float64 { return float64(p.Mismatches) }, fixed(0), false)
	tw.Flush()
	fmt.Fprint(w, `
naive:  a struct per reading, strings.Split, fmt.Sprintf: a reference, not the baseline.
stdlib: the standard library with care (sync.Pool of scratch, value slices,
        bytes.Cut, encoding/json into a pooled buffer): memkit's baseline.
Every response was compared byte for byte with the reference answer.
CPU per request is the whole process's (the load generator's included).
Latencies run from each request's due time on an open-loop schedule; they
are upper bounds of histogram buckets 6.25% wide, printed to two
significant digits; ratios of latencies closer to 1 than ±0.07 are noise.
`)
	for _, p := range r.phases() {
		if p.Warning != "" {
			fmt.Fprintf(w, "%s service: %s\n", p.Service, p.Warning)
		}
	}
	var few []string
	for _, p := range r.phases() {
		if p.FewGCs {
			few = append(few, fmt.Sprintf("%s (%d)", p.Service, p.GCCycles))
		}
	}
	if len(few) > 0 {
		fmt.Fprintf(w, "\nToo short for GC figures: %s saw fewer than %d GC cycles, so one cycle\n"+
			"more or less moves its GC rows by 10%% or more. Run longer (--duration) to compare them.\n",
			strings.Join(few, ", "), minGCCycles)
	}
}

// formatMicros prints a duration in microseconds to two significant
// digits, the precision of latencyHist, in µs, ms or s.
func formatMicros(us float64) string {
	unit := "µs"
	switch {
	case us >= 1e6:
		us, unit = us/1e6, "s"
	case us >= 1e3:
		us, unit = us/1e3, "ms"
	}
	if us >= 100 { // 2 significant digits of a 3-digit number: 120, not 1.2e+02
		return strconv.FormatFloat(math.Round(us/10)*10, 'f', 0, 64) + unit
	}
	return strconv.FormatFloat(us, 'g', 2, 64) + unit
}
