package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/memkit/memkit/internal/proc"
	"github.com/memkit/memkit/stats"
)

// This file is memkit demo's headline scenario: a key-value HTTP service
// holding a data set under a container-style memory limit, three ways,
// each in its own process (re-running this binary with kvServeCmd), driven
// over loopback by an open-loop load generator in this process.

const kvDemoUsage = `usage: memkit demo [flags]
       memkit demo ingest [flags]   (the second scenario: run 'memkit demo ingest -h')

Runs a key-value HTTP service (GET and PUT /kv/ID, values of 100-1100 bytes)
three ways, each in its own process with GOMEMLIMIT set as a container's
memory limit would be:

  stdlib     a careful standard-library map: 64 shards of map[uint64][]byte
             behind RWMutexes, values copied out under the read lock
  fastcache  VictoriaMetrics/fastcache, sized to the data (it is a cache: it
             may drop entries, which the demo counts as lost keys)
  memkit     kv.Map: keys, values and index where the GC does not scan them

Each service loads --entries entries, then the load generator sends 90% GET
and 10% PUT (an overwrite) at --rate requests/s over --conns keep-alive
connections, open loop: each request has a due time and its latency is
measured from it, so a stall shows in the percentiles; a service that did
not reach the rate gets a warning. Every response is checked against the
bytes last written, and at the end every key is read back (lost keys). It
prints side by side: RSS, CPU per request (the service process's getrusage
time), GC cycles, the CPU of one forced full GC, latency percentiles and
lost keys.

flags:
`

// kvServeCmd is the hidden command a demo service's process runs.
const kvServeCmd = "_kv-serve"

// kvDemoServices are the demo's services in column order, and the store
// each runs on.
var kvDemoServices = []struct{ name, store string }{
	{"stdlib", "idmap"}, {"fastcache", "fastcache"}, {"memkit", "memkit"},
}

type kvDemoConfig struct {
	entries   int
	rate      int
	conns     int
	duration  time.Duration
	warmup    time.Duration
	memLimit  float64
	cacheSize float64
	json      bool
}

func parseKVDemoFlags(stdout io.Writer, args []string) (*kvDemoConfig, error) {
	fs := flag.NewFlagSet("memkit demo", flag.ContinueOnError)
	c := new(kvDemoConfig)
	fs.IntVar(&c.entries, "entries", 500_000, "`n` entries each service holds (500000: about 300MiB of keys and values)")
	fs.IntVar(&c.rate, "rate", 5000, "fixed request `rate` per second sent to each service")
	fs.IntVar(&c.conns, "conns", 8, "keep-alive `connections` the load generator spreads the rate over")
	fs.DurationVar(&c.duration, "duration", 12*time.Second, "measured `duration` per service, after the warm-up")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "warm-up `duration` per service")
	fs.Float64Var(&c.memLimit, "memlimit", 1.6, "each service's GOMEMLIMIT as a `multiple` of its data's key+value bytes (0: no limit)")
	fs.Float64Var(&c.cacheSize, "fastcache-size", 1.0, "fastcache's maxBytes as a `multiple` of the data's key+value bytes")
	fs.BoolVar(&c.json, "json", false, "print the comparison as JSON")
	if err := parseFlags(fs, stdout, kvDemoUsage, args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, usagef("demo: unexpected argument %q (the other scenario is 'memkit demo ingest')", fs.Arg(0))
	case c.entries < c.conns:
		return nil, usagef("demo: --entries %d: must be at least --conns", c.entries)
	case c.rate < 1:
		return nil, usagef("demo: --rate %d: must be at least 1", c.rate)
	case c.conns < 1 || c.conns > c.rate:
		return nil, usagef("demo: --conns %d: must be between 1 and --rate", c.conns)
	case c.duration <= 0 || c.warmup < 0:
		return nil, usagef("demo: --duration %v and --warmup %v: must be positive", c.duration, c.warmup)
	case c.memLimit < 0 || c.cacheSize <= 0:
		return nil, usagef("demo: --memlimit %v must not be negative, --fastcache-size %v must be positive", c.memLimit, c.cacheSize)
	}
	return c, nil
}

// runDemo is memkit demo: the key-value scenario, or with "ingest" first
// the telemetry scenario.
func runDemo(stdout, stderr io.Writer, args []string) error {
	if len(args) > 0 && args[0] == "ingest" {
		return runIngestDemo(stdout, stderr, args[1:])
	}
	return runKVDemo(stdout, stderr, args)
}

// kvDemoPhase is one service's run.
type kvDemoPhase struct {
	Service        string  `json:"service"`
	Requests       uint64  `json:"requests"`
	Measured       float64 `json:"measured_seconds"`
	RequestsPerSec float64 `json:"requests_per_sec"`
	P50            float64 `json:"p50_us"`
	P99            float64 `json:"p99_us"`
	P999           float64 `json:"p999_us"`
	// CPUPerRequest is the service process's CPU time over the measured
	// part per request, in µs (the load generator runs in another process).
	CPUPerRequest float64 `json:"cpu_us_per_request"`
	Mismatches    uint64  `json:"mismatched_responses"` // a GET that returned other bytes than the last written
	Misses        uint64  `json:"get_misses"`           // a GET answered 404 during the run
	Errors        uint64  `json:"errors"`
	Unsent        uint64  `json:"unsent_requests"`
	Warning       string  `json:"warning,omitempty"`
	kvServeReport
}

// kvServeReport is what a service's process reports about itself.
type kvServeReport struct {
	GoMemLimit    int64   `json:"gomemlimit_bytes"`
	DataBytes     int64   `json:"data_bytes"`
	FillSec       float64 `json:"fill_seconds"`
	RSS           uint64  `json:"rss_bytes"`
	PeakRSS       uint64  `json:"peak_rss_bytes"`
	CPUSec        float64 `json:"measured_cpu_seconds"`
	GCCycles      uint32  `json:"gc_cycles"`
	ForcedGCEmpty float64 `json:"forced_gc_cpu_ms_empty"`
	ForcedGCFull  float64 `json:"forced_gc_cpu_ms_full"`
	Lost          uint64  `json:"lost_keys"`
}

// kvDemoReport is the whole comparison, as --json prints it.
type kvDemoReport struct {
	Machine  string        `json:"machine"`
	Entries  int           `json:"entries"`
	Rate     int           `json:"rate"`
	Conns    int           `json:"conns"`
	Warmup   string        `json:"warmup_per_service"`
	Duration string        `json:"measured_per_service"`
	Services []kvDemoPhase `json:"services"`
}

func runKVDemo(stdout, stderr io.Writer, args []string) error {
	cfg, err := parseKVDemoFlags(stdout, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	data := kvDataBytes(cfg.entries)
	env := []string{"GOGC=100"}
	if cfg.memLimit > 0 {
		env = append(env, "GOMEMLIMIT="+strconv.FormatInt(int64(float64(data)*cfg.memLimit), 10))
	}
	rep := kvDemoReport{
		Machine: fmt.Sprintf("%s, %s, GOMAXPROCS=%d", versionLine(), cpuModel(), runtime.GOMAXPROCS(0)),
		Entries: cfg.entries, Rate: cfg.rate, Conns: cfg.conns, Warmup: cfg.warmup.String(), Duration: cfg.duration.String(),
	}
	for _, svc := range kvDemoServices {
		fmt.Fprintf(stderr, "running %s service (%s): %d entries (%s), %v warm-up, %v at %d req/s...\n",
			svc.name, strings.Join(env, " "), cfg.entries, stats.FormatBytes(uint64(data)), cfg.warmup, cfg.duration, cfg.rate)
		ph, err := runKVPhase(stderr, cfg, env, svc.store)
		if err != nil {
			return fmt.Errorf("demo: %s service: %w", svc.name, err)
		}
		ph.Service = svc.name
		if ph.Warning != "" {
			fmt.Fprintf(stderr, "%s service: %s\n", svc.name, ph.Warning)
		}
		rep.Services = append(rep.Services, *ph)
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(&rep)
	}
	printKVDemo(stdout, &rep)
	for _, p := range rep.Services {
		if p.Mismatches > 0 || p.Errors > 0 {
			return fmt.Errorf("demo: the %s service sent %d wrong answers and %d errors", p.Service, p.Mismatches, p.Errors)
		}
	}
	return nil
}

// runKVPhase starts one service's process, warms it up, measures it, has
// it verify every key and report, and stops it.
func runKVPhase(stderr io.Writer, cfg *kvDemoConfig, env []string, store string) (*kvDemoPhase, error) {
	cmd, err := childCommand(env, kvServeCmd, "--store", store, "--entries", strconv.Itoa(cfg.entries),
		"--fastcache-size", strconv.FormatFloat(cfg.cacheSize, 'g', -1, 64))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer cmd.Process.Kill() // a no-op once it has exited
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Wait()
		return nil, fmt.Errorf("the service did not start: %w", err)
	}
	addr := strings.TrimSpace(line)
	gens := make([]uint32, cfg.entries)
	if r := kvDrive(addr, cfg, cfg.warmup, gens); r.firstErr != nil {
		return nil, r.firstErr
	}
	if _, err := kvControl(addr, "/_mark", nil); err != nil {
		return nil, err
	}
	r := kvDrive(addr, cfg, cfg.duration, gens)
	if r.firstErr != nil {
		return nil, r.firstErr
	}
	if r.requests == 0 {
		return nil, errors.New("no request completed")
	}
	body := make([]byte, 0, 4*len(gens))
	for _, g := range gens {
		body = binary.LittleEndian.AppendUint32(body, g)
	}
	js, err := kvControl(addr, "/_report", body)
	if err != nil {
		return nil, err
	}
	ph := &kvDemoPhase{
		Requests: r.requests, Measured: r.elapsed.Seconds(), RequestsPerSec: float64(r.requests) / r.elapsed.Seconds(),
		P50: us(r.lat.quantile(0.5)), P99: us(r.lat.quantile(0.99)), P999: us(r.lat.quantile(0.999)),
		Mismatches: r.mismatches, Misses: r.misses, Errors: r.errors, Unsent: r.missed,
	}
	if err := json.Unmarshal(js, &ph.kvServeReport); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	ph.CPUPerRequest = ph.CPUSec * 1e6 / float64(r.requests)
	ph.Warning = rateShortfall("the service", ph.RequestsPerSec, cfg.rate, r.missed)
	kvControl(addr, "/_quit", nil)
	return ph, cmd.Wait()
}

// kvControl POSTs body to a service's control path and returns the answer.
func kvControl(addr, path string, body []byte) ([]byte, error) {
	resp, err := http.Post("http://"+addr+path, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s: %s", path, resp.Status, b)
	}
	return b, err
}

// kvDrive sends 90% GET and 10% PUT to addr for d at cfg.rate over
// cfg.conns connections, open loop. Connection c overwrites only keys c,
// c+conns, ..., advancing their generations in gens, so it knows what each
// of its GETs of those must return; a GET of any other key must return a
// well-formed value of that key. The senders sleep in nanosleep: their CPU
// is this process's, not the service's, and realClock's millisecond
// lateness would be most of a GET's latency.
func kvDrive(addr string, cfg *kvDemoConfig, d time.Duration, gens []uint32) *loadResult {
	return openLoop(nanosleepClock{}, cfg.rate, cfg.conns, d, func(c int, sched *schedule, r *loadResult) error {
		return kvConn(addr, sched, c, cfg, gens, r)
	})
}

// kvConn is one connection's loop of kvDrive.
func kvConn(addr string, sched *schedule, c int, cfg *kvDemoConfig, gens []uint32, r *loadResult) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 16<<10)
	rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
	own := uint64((cfg.entries - c + cfg.conns - 1) / cfg.conns)
	req := make([]byte, 0, 2048)
	body := make([]byte, 0, 2048)
	for {
		due, ok := sched.wait()
		if !ok {
			return nil
		}
		x := rng.Uint64()
		put := x%10 == 0
		var id uint64
		req = req[:0]
		if put {
			id = uint64(c) + uint64(cfg.conns)*((x>>8)%own)
			gens[id]++
			n := kvValueLen(id, gens[id])
			req = append(req, "PUT /kv/"...)
			req = strconv.AppendUint(req, id, 10)
			req = append(req, " HTTP/1.1\r\nHost: kv\r\nContent-Length: "...)
			req = strconv.AppendInt(req, int64(n), 10)
			req = append(req, "\r\n\r\n"...)
			req = appendKVValue(req, id, gens[id])
		} else {
			id = (x >> 8) % uint64(cfg.entries)
			req = append(req, "GET /kv/"...)
			req = strconv.AppendUint(req, id, 10)
			req = append(req, " HTTP/1.1\r\nHost: kv\r\n\r\n"...)
		}
		if _, err := conn.Write(req); err != nil {
			return err
		}
		var code int
		body, code, err = readStatusResponse(br, body[:0])
		if err != nil {
			return err
		}
		r.lat.record(time.Since(due))
		r.requests++
		switch {
		case put && code != http.StatusOK:
			return fmt.Errorf("PUT /kv/%d: status %d", id, code)
		case put:
		case code == http.StatusNotFound:
			r.misses++
		case code != http.StatusOK:
			return fmt.Errorf("GET /kv/%d: status %d", id, code)
		default:
			g, ok := checkKVValue(body, id)
			if !ok || (id%uint64(cfg.conns) == uint64(c) && g != gens[id]) {
				r.mismatches++
			}
		}
	}
}

// runKVServe is one demo service's process: load the data, serve, and on
// the control paths mark the measured part's start, report, and quit.
func runKVServe(stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet(kvServeCmd, flag.ContinueOnError)
	store := fs.String("store", "", "")
	entries := fs.Int("entries", 0, "")
	cacheSize := fs.Float64("fastcache-size", 1, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	data := kvDataBytes(*entries)
	s, err := newKVStore(*store, kvSizing{entries: *entries, bytes: data, cacheFactor: *cacheSize})
	if err != nil {
		return err
	}
	defer s.Close()
	var rep kvServeReport
	rep.GoMemLimit = debug.SetMemoryLimit(-1)
	cpu, _ := forcedGC()
	rep.ForcedGCEmpty = ms(cpu)
	t0 := time.Now()
	if err := kvFill(s, *entries, runtime.GOMAXPROCS(0)); err != nil {
		return err
	}
	rep.FillSec = time.Since(t0).Seconds()
	runtime.GC()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	svc := &kvService{store: s}
	var (
		cpu0  time.Duration
		gc0   uint32
		quit  = make(chan struct{})
		mstat runtime.MemStats
		ctl   sync.Mutex // the control handlers run on the server's goroutines
	)
	mux := http.NewServeMux()
	mux.Handle("/kv/", svc)
	mux.HandleFunc("POST /_mark", func(w http.ResponseWriter, r *http.Request) {
		ctl.Lock()
		defer ctl.Unlock()
		runtime.ReadMemStats(&mstat)
		gc0 = mstat.NumGC
		cpu0, _ = proc.CPU()
	})
	mux.HandleFunc("POST /_report", func(w http.ResponseWriter, r *http.Request) {
		ctl.Lock()
		defer ctl.Unlock()
		cpu1, _ := proc.CPU()
		runtime.ReadMemStats(&mstat)
		rep.CPUSec = (cpu1 - cpu0).Seconds()
		rep.GCCycles = mstat.NumGC - gc0
		rep.RSS, rep.PeakRSS, _ = readRSS()
		b, err := io.ReadAll(r.Body)
		if err != nil || len(b) != 4**entries {
			http.Error(w, fmt.Sprintf("want %d generations", *entries), http.StatusBadRequest)
			return
		}
		gens := make([]uint32, *entries)
		for i := range gens {
			gens[i] = binary.LittleEndian.Uint32(b[4*i:])
			rep.DataBytes += 8 + int64(kvValueLen(uint64(i), gens[i]))
		}
		cpu, _ := forcedGC()
		rep.ForcedGCFull = ms(cpu)
		rep.Lost = kvVerify(s, *entries, gens)
		json.NewEncoder(w).Encode(&rep)
	})
	mux.HandleFunc("POST /_quit", func(w http.ResponseWriter, r *http.Request) { close(quit) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintln(stdout, ln.Addr())
	<-quit
	return srv.Close()
}

// kvService is the demo's key-value service, the same for every store:
// GET /kv/ID answers the value (404 if absent), PUT /kv/ID stores the body.
// It is written with care: a sync.Pool of per-request buffers, the header
// slice assigned without Header.Set's allocation.
type kvService struct {
	store kvStore
	bufs  sync.Pool // *kvBuf
}

type kvBuf struct {
	key [8]byte
	val []byte
}

var octetStream = []string{"application/octet-stream"}

func (s *kvService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := parseInt([]byte(r.URL.Path[len("/kv/"):]))
	if !ok {
		http.Error(w, "want /kv/ID, ID a decimal number", http.StatusBadRequest)
		return
	}
	b, _ := s.bufs.Get().(*kvBuf)
	if b == nil {
		b = &kvBuf{val: make([]byte, 0, 2048)}
	}
	defer s.bufs.Put(b)
	binary.LittleEndian.PutUint64(b.key[:], uint64(id))
	switch r.Method {
	case http.MethodGet:
		var found bool
		b.val, found = s.store.Get(b.val[:0], b.key[:])
		if !found {
			http.Error(w, "no such key", http.StatusNotFound)
			return
		}
		w.Header()["Content-Type"] = octetStream
		w.Write(b.val)
	case http.MethodPut:
		n := int(r.ContentLength)
		if n < 0 || n > 64<<10 {
			http.Error(w, "want a Content-Length up to 64KiB", http.StatusBadRequest)
			return
		}
		b.val = append(b.val[:0], make([]byte, n)...)[:n] // grows only the first few times
		if _, err := io.ReadFull(r.Body, b.val); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := s.store.Set(b.key[:], b.val); err != nil {
			http.Error(w, err.Error(), http.StatusInsufficientStorage)
			return
		}
	default:
		http.Error(w, "GET or PUT", http.StatusMethodNotAllowed)
	}
}

// printKVDemo prints the services side by side with memkit's ratios to the
// standard-library map and to fastcache.
func printKVDemo(w io.Writer, r *kvDemoReport) {
	if len(r.Services) == 0 {
		return
	}
	first := &r.Services[0]
	limit := "no GOMEMLIMIT"
	if first.GoMemLimit > 0 && first.GoMemLimit < 1<<62 {
		limit = "GOMEMLIMIT=" + stats.FormatBytes(uint64(first.GoMemLimit))
	}
	fmt.Fprintf(w, "memkit demo: a key-value HTTP service, %d entries (%s of keys and values), %s, %d req/s (90%% GET, 10%% PUT) over %d connections, %s warm-up and %s measured per service\n",
		r.Entries, stats.FormatBytes(uint64(first.DataBytes)), limit, r.Rate, r.Conns, r.Warmup, r.Duration)
	fmt.Fprintf(w, "%s\n\n", r.Machine)
	byName := map[string]*kvDemoPhase{}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for i := range r.Services {
		byName[r.Services[i].Service] = &r.Services[i]
		fmt.Fprintf(tw, "%s\t", r.Services[i].Service)
	}
	fmt.Fprintln(tw, "memkit/stdlib\tmemkit/fastcache\t")
	mk, st, fc := byName["memkit"], byName["stdlib"], byName["fastcache"]
	row := func(name string, get func(*kvDemoPhase) float64, f func(float64) string, ratios bool) {
		fmt.Fprintf(tw, "%s\t", name)
		for i := range r.Services {
			fmt.Fprintf(tw, "%s\t", f(get(&r.Services[i])))
		}
		for _, base := range []*kvDemoPhase{st, fc} {
			ratio := "-"
			if ratios && mk != nil && base != nil && get(base) != 0 {
				ratio = fmt.Sprintf("%.2f", get(mk)/get(base))
			}
			fmt.Fprintf(tw, "%s\t", ratio)
		}
		fmt.Fprintln(tw)
	}
	fixed := func(prec int) func(float64) string {
		return func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	}
	bytesOf := func(v float64) string { return stats.FormatBytes(uint64(v)) }
	row("RSS", func(p *kvDemoPhase) float64 { return float64(p.RSS) }, bytesOf, true)
	row("RSS / data", func(p *kvDemoPhase) float64 { return float64(p.RSS) / float64(p.DataBytes) }, fixed(2), true)
	row("CPU per request", func(p *kvDemoPhase) float64 { return p.CPUPerRequest }, formatMicros, true)
	row("GC cycles", func(p *kvDemoPhase) float64 { return float64(p.GCCycles) }, fixed(0), true)
	row("forced GC CPU, empty", func(p *kvDemoPhase) float64 { return p.ForcedGCEmpty }, func(v float64) string { return fmt.Sprintf("%.1fms", v) }, false)
	row("forced GC CPU, full", func(p *kvDemoPhase) float64 { return p.ForcedGCFull }, func(v float64) string { return fmt.Sprintf("%.1fms", v) }, true)
	row("requests/s reached", func(p *kvDemoPhase) float64 { return p.RequestsPerSec }, fixed(0), false)
	row("p50 latency", func(p *kvDemoPhase) float64 { return p.P50 }, formatMicros, true)
	row("p99 latency", func(p *kvDemoPhase) float64 { return p.P99 }, formatMicros, true)
	row("p99.9 latency", func(p *kvDemoPhase) float64 { return p.P999 }, formatMicros, true)
	row("lost keys", func(p *kvDemoPhase) float64 { return float64(p.Lost) }, fixed(0), false)
	row("GETs answered 404", func(p *kvDemoPhase) float64 { return float64(p.Misses) }, fixed(0), false)
	row("wrong answers", func(p *kvDemoPhase) float64 { return float64(p.Mismatches) }, fixed(0), false)
	tw.Flush()
	fmt.Fprint(w, `
stdlib:    64 shards of map[uint64][]byte behind RWMutexes (careful standard library)
fastcache: VictoriaMetrics/fastcache sized to the data; a cache, so it may drop keys
memkit:    kv.Map; keys, values and index where the GC does not scan them
Each service ran in its own process; RSS is that process's at the end of the
run, CPU per request its getrusage time over the measured part per request.
Forced GC CPU is getrusage around one runtime.GC on one P (median of 5) before loading
and after the run. Every GET was checked against the bytes last written, and
every key was read back at the end (lost keys). Latencies run from each
request's due time on an open-loop schedule (the load generator wakes within
about 50µs of each due time, which is in all of them alike).
`)
	for _, p := range r.Services {
		if p.Warning != "" {
			fmt.Fprintf(w, "%s service: %s\n", p.Service, p.Warning)
		}
	}
}
