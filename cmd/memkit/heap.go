package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/memkit/memkit/internal/proc"
	"github.com/memkit/memkit/stats"
)

// This file is `memkit heap`: the large-heap comparison of issue 22. Each
// store runs in a process of its own (RSS is per process), started by
// re-running this binary with the hidden command heapChildCmd.

const heapUsage = `usage: memkit heap [flags]

Fills each byte map with --entries entries (8-byte keys, values of 100-1100
bytes), then drives it at a fixed rate of 90% Get and 10% overwrite from
--workers goroutines, open loop (each operation has a due time; latency is
measured from it, so a stall delays the operations behind it and shows;
each sender wakes once per --tick and sends every operation due by then),
with --garbage bytes of per-request garbage per operation, as a server
makes. Each store runs in its own process, once at GOGC=100 and once more
under GOMEMLIMIT = 1.6× the data (a container's memory limit). It prints
per store: RSS, CPU per operation (getrusage), GC cycles, the CPU of one
forced full GC with the map empty and full, lost keys (every key is read
back at the end), latency percentiles, and the issue's targets with their
ratios.

flags:
`

// heapChildCmd is the hidden command a store's process runs.
const heapChildCmd = "_heap-child"

// heapStores are the stores compared, in column order; "idmap" is the
// careful standard-library map for 8-byte keys.
var heapStores = []string{"idmap", "fastcache", "bigcache", "memkit"}

// heapConfig is the command line of memkit heap and of its children.
type heapConfig struct {
	entries   int
	rate      int
	duration  time.Duration
	workers   int
	garbage   int
	cacheSize float64
	tick      time.Duration
	stores    []string
	settings  []string // "gogc" and/or "memlimit"
	json      bool
	store     string // the child's store
}

func (c *heapConfig) flags(fs *flag.FlagSet) {
	fs.IntVar(&c.entries, "entries", 3_000_000, "`n` entries in each map")
	fs.IntVar(&c.rate, "rate", 50_000, "operations per second, all workers together")
	fs.DurationVar(&c.duration, "duration", 20*time.Second, "`duration` of each measured run")
	fs.IntVar(&c.workers, "workers", 4, "goroutines sending operations")
	fs.IntVar(&c.garbage, "garbage", 2048, "`bytes` of per-request garbage per operation (a body buffer and 8 small objects)")
	fs.DurationVar(&c.tick, "tick", time.Millisecond, "each sender wakes every `period` (staggered) and sends what is due; 0: a sleep per operation")
	fs.Float64Var(&c.cacheSize, "fastcache-size", 1.0, "fastcache's maxBytes as a `multiple` of the data's key+value bytes (a user sizes a cache to its data)")
}

func parseHeapFlags(stdout io.Writer, args []string) (*heapConfig, error) {
	fs := flag.NewFlagSet("memkit heap", flag.ContinueOnError)
	c := new(heapConfig)
	c.flags(fs)
	stores := fs.String("stores", strings.Join(heapStores, ","), "comma-separated `stores` to run: idmap, stdmap, fastcache, bigcache, memkit, and harness (no store: the senders' own CPU and latency)")
	settings := fs.String("settings", "gogc,memlimit", "comma-separated runtime `settings`: gogc (GOGC=100) and memlimit (also GOMEMLIMIT = 1.6× the data)")
	fs.BoolVar(&c.json, "json", false, "print the results as JSON")
	if err := parseFlags(fs, stdout, heapUsage, args); err != nil {
		return nil, err
	}
	c.stores, c.settings = strings.Split(*stores, ","), strings.Split(*settings, ",")
	if err := c.check(); err != nil {
		return nil, err
	}
	for _, s := range c.stores {
		if _, ok := kvImplDocs[s]; !ok || s == "ristretto" {
			return nil, usagef("heap: --stores: unknown store %q (want idmap, stdmap, fastcache, bigcache, memkit, harness)", s)
		}
	}
	for _, s := range c.settings {
		if s != "gogc" && s != "memlimit" {
			return nil, usagef("heap: --settings: unknown setting %q (want gogc, memlimit)", s)
		}
	}
	if fs.NArg() > 0 {
		return nil, usagef("heap: unexpected argument %q", fs.Arg(0))
	}
	return c, nil
}

func (c *heapConfig) check() error {
	switch {
	case c.entries < c.workers || int64(c.entries) > 1<<32:
		return usagef("heap: --entries %d: must be between --workers and 2^32", c.entries)
	case c.rate < c.workers:
		return usagef("heap: --rate %d: must be at least --workers", c.rate)
	case c.duration <= 0:
		return usagef("heap: --duration %v: must be positive", c.duration)
	case c.workers < 1:
		return usagef("heap: --workers %d: must be at least 1", c.workers)
	case c.garbage < 0:
		return usagef("heap: --garbage %d: must not be negative", c.garbage)
	case c.tick < 0:
		return usagef("heap: --tick %v: must not be negative", c.tick)
	case c.cacheSize <= 0:
		return usagef("heap: --fastcache-size %v: must be positive", c.cacheSize)
	}
	return nil
}

// heapResult is one store's run in one setting, as its process reports it.
type heapResult struct {
	Store      string  `json:"store"`
	Setting    string  `json:"setting"`
	GoMemLimit int64   `json:"gomemlimit_bytes,omitempty"`
	Entries    int     `json:"entries"`
	DataBytes  int64   `json:"data_bytes"` // keys + values live at the end
	FillSec    float64 `json:"fill_seconds"`
	RSS        uint64  `json:"rss_bytes"`      // at the end of the measured run
	PeakRSS    uint64  `json:"peak_rss_bytes"` // VmHWM: the fill's peak included
	Ops        uint64  `json:"ops"`
	Seconds    float64 `json:"measured_seconds"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	CPUPerOp   float64 `json:"cpu_us_per_op"`
	GCCycles   uint32  `json:"gc_cycles"`
	// ForcedGCEmpty and ForcedGCFull are the process CPU of one runtime.GC
	// on one P (median of 5, see forcedGC), in ms, after the run without the
	// map and with it; ForcedGCWall is the wall time of one with the map, at
	// the process's GOMAXPROCS (median of 3).
	ForcedGCEmpty float64 `json:"forced_gc_cpu_ms_empty"`
	ForcedGCFull  float64 `json:"forced_gc_cpu_ms_full"`
	ForcedGCWall  float64 `json:"forced_gc_wall_ms_full"`
	P50           float64 `json:"p50_us"`
	P99           float64 `json:"p99_us"`
	P999          float64 `json:"p999_us"`
	Lost          uint64  `json:"lost_keys"`
	Misses        uint64  `json:"get_misses"`  // Gets that found nothing during the run
	Corrupt       uint64  `json:"get_corrupt"` // Gets that returned other bytes
	Unsent        uint64  `json:"unsent_ops"`
	// Wakeups are the senders' sleeps in the measured run, all senders
	// together; CtxSwitches the process's context switches (getrusage,
	// voluntary and involuntary) in it.
	Wakeups     uint64 `json:"sender_wakeups"`
	CtxSwitches uint64 `json:"context_switches"`
	// Stalls are the process-wide stalls in the measured run: times when
	// every sender was more than stallLate late at once (see findStalls);
	// StallOps the operations late in them.
	Stalls   int    `json:"stalls"`
	StallOps uint64 `json:"stall_ops"`
	Warning  string `json:"warning,omitempty"`
}

func runHeap(stdout, stderr io.Writer, args []string) error {
	cfg, err := parseHeapFlags(stdout, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	data := kvDataBytes(cfg.entries)
	var results []heapResult
	for _, setting := range cfg.settings {
		env := []string{"GOGC=100"}
		if setting == "memlimit" {
			env = append(env, "GOMEMLIMIT="+strconv.FormatInt(data*16/10, 10))
		}
		for _, store := range cfg.stores {
			fmt.Fprintf(stderr, "heap: %s, %s: %d entries (%s), %d ops/s for %v...\n",
				store, strings.Join(env, " "), cfg.entries, stats.FormatBytes(uint64(data)), cfg.rate, cfg.duration)
			out, err := runChild(stderr, env, heapChildCmd,
				"--store", store, "--entries", strconv.Itoa(cfg.entries), "--rate", strconv.Itoa(cfg.rate),
				"--duration", cfg.duration.String(), "--workers", strconv.Itoa(cfg.workers),
				"--garbage", strconv.Itoa(cfg.garbage), "--tick", cfg.tick.String(), "--fastcache-size", strconv.FormatFloat(cfg.cacheSize, 'g', -1, 64))
			if err != nil {
				return fmt.Errorf("heap: %w", err)
			}
			var r heapResult
			if err := json.Unmarshal(out, &r); err != nil {
				return fmt.Errorf("heap: %s's output: %w", store, err)
			}
			r.Setting = setting
			if r.Warning != "" {
				fmt.Fprintln(stderr, r.Warning)
			}
			results = append(results, r)
		}
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	printHeap(stdout, cfg, results)
	return nil
}

// runHeapChild is one store's process: fill, measure, verify, report JSON.
func runHeapChild(stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet(heapChildCmd, flag.ContinueOnError)
	c := new(heapConfig)
	c.flags(fs)
	fs.StringVar(&c.store, "store", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	res := heapResult{Store: c.store, Entries: c.entries, GoMemLimit: debug.SetMemoryLimit(-1)}
	if res.GoMemLimit == 1<<63-1 {
		res.GoMemLimit = 0
	}
	s, err := newKVStore(c.store, kvSizing{entries: c.entries, bytes: kvDataBytes(c.entries), cacheFactor: c.cacheSize})
	if err != nil {
		return err
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()

	t0 := time.Now()
	if err := kvFill(s, c.entries, runtime.GOMAXPROCS(0)); err != nil {
		return fmt.Errorf("%s: fill: %w", c.store, err)
	}
	res.FillSec = time.Since(t0).Seconds()
	runtime.GC()

	gens := make([]uint32, c.entries)
	if h, ok := s.(*harnessStore); ok {
		h.gens = gens
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, _ := proc.CPU()
	cs0, _ := proc.ContextSwitches()
	start := time.Now()
	per := make([]heapWorker, c.workers)
	interval := time.Duration(float64(time.Second) * float64(c.workers) / float64(c.rate))
	var wg sync.WaitGroup
	for w := range per {
		hw := &per[w]
		hw.late = make([]lateOp, 0, 1024)
		hw.sched = newSchedule(realClock{}, start.Add(interval*time.Duration(w)/time.Duration(c.workers)),
			interval, start.Add(c.duration), c.duration).withTick(c.tick, start.Add(c.tick*time.Duration(w)/time.Duration(c.workers)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			hw.run(s, c, w, gens)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, _ := proc.CPU()
	cs1, _ := proc.ContextSwitches()
	runtime.ReadMemStats(&ms1)
	res.RSS, res.PeakRSS, _ = readRSS()

	var lat latencyHist
	var late []lateOp
	for w := range per {
		hw := &per[w]
		if hw.err != nil {
			return fmt.Errorf("%s: %w", c.store, hw.err)
		}
		lat.merge(&hw.lat)
		late = append(late, hw.late...)
		res.Ops += hw.ops
		res.Misses += hw.misses
		res.Corrupt += hw.corrupt
		res.Unsent += hw.sched.missed
		res.Wakeups += hw.sched.sleeps
	}
	res.Seconds = elapsed.Seconds()
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	res.CPUPerOp = float64(cpu1-cpu0) / 1e3 / float64(res.Ops)
	res.GCCycles = ms1.NumGC - ms0.NumGC
	res.CtxSwitches = cs1 - cs0
	res.P50, res.P99, res.P999 = us(lat.quantile(0.5)), us(lat.quantile(0.99)), us(lat.quantile(0.999))
	res.Stalls, res.StallOps = findStalls(late, c.workers)
	res.Warning = rateShortfall(c.store, res.OpsPerSec, c.rate, res.Unsent)

	cpu, wall := forcedGC()
	res.ForcedGCFull, res.ForcedGCWall = ms(cpu), ms(wall)
	res.Lost = kvVerify(s, c.entries, gens)
	for i := range uint64(c.entries) {
		res.DataBytes += 8 + int64(kvValueLen(i, gens[i]))
	}
	// The same process without the map (closed, unreachable, and its
	// objects swept by two GCs), so that full − empty is the map's own GC
	// work, not the senders' state or the heap the run left behind.
	s.Close()
	s = nil
	runtime.GC()
	runtime.GC()
	cpu, _ = forcedGC()
	res.ForcedGCEmpty = ms(cpu)
	runtime.KeepAlive(gens)
	runtime.KeepAlive(per)
	return json.NewEncoder(stdout).Encode(&res)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
func us(d time.Duration) float64 { return float64(d) / 1e3 }

// heapWorker is one sending goroutine of a heap run. Worker w overwrites
// only keys w, w+workers, ..., so that it alone advances their
// generations; it reads any key and checks the bytes it gets.
type heapWorker struct {
	sched                *schedule
	lat                  latencyHist
	late                 []lateOp // operations more than stallLate late
	ops, misses, corrupt uint64
	err                  error
	_                    [64]byte
}

// heapRequest is the per-request garbage: what a server's request handling
// leaves behind (a body buffer, parsed fields), linked so that the GC must
// trace it; a worker keeps its last heapInFlight alive, as requests in flight.
type heapRequest struct {
	body   []byte
	fields [8]*heapField
}

type heapField struct {
	name  string
	next  *heapField
	value []byte
}

const heapInFlight = 64

// A run's latency tail on this kind of machine is made of stalls of the
// whole process: the four senders are due every 80 µs, and every few
// seconds all of them are several ms late at once, for a few hundred
// operations. A program of four goroutines that only sleep on staggered
// 1 ms ticks, with no store and no garbage, saw 10 and 11 such stalls
// (up to 10 ms) in 25 s on the 2-core VM of docs/performance.md; the
// harness store shows them too, and a store whose work stalls the process
// adds its own. 0.1% of a run's operations is 50 a second, so the stalls
// set p99.9: the table prints how many each run had, to read its p99.9
// against.
const (
	stallLate = 2500 * time.Microsecond // later than the tick's wait and the timer's lateness
	stallGap  = 10 * time.Millisecond   // late operations further apart are two stalls
)

// lateOp is an operation more than stallLate late: its due time and its
// sender.
type lateOp struct {
	at     time.Time
	sender int
}

// findStalls groups late operations into stalls — runs of them with no
// gap over stallGap — and returns the number of stalls in which every one
// of the senders was late (one sender's bad luck is not a stall of the
// process) and the operations late in those.
func findStalls(late []lateOp, senders int) (n int, ops uint64) {
	slices.SortFunc(late, func(a, b lateOp) int { return a.at.Compare(b.at) })
	seen := make([]bool, senders)
	for i := 0; i < len(late); {
		j, count := i, 0
		clear(seen)
		for ; j < len(late) && (j == i || late[j].at.Sub(late[j-1].at) <= stallGap); j++ {
			if !seen[late[j].sender] {
				seen[late[j].sender] = true
				count++
			}
		}
		if count == senders {
			n++
			ops += uint64(j - i)
		}
		i = j
	}
	return n, ops
}

func (hw *heapWorker) run(s kvStore, c *heapConfig, w int, gens []uint32) {
	rng := rand.New(rand.NewPCG(uint64(w), 22))
	own := uint64((c.entries - w + c.workers - 1) / c.workers)
	var inFlight [heapInFlight]*heapRequest
	var k, v []byte
	dst := make([]byte, 0, 2048)
	for n := 0; ; n++ {
		due, ok := hw.sched.wait()
		if !ok {
			return
		}
		req := &heapRequest{body: make([]byte, max(c.garbage-8*64, 64))}
		for i := range req.fields {
			req.fields[i] = &heapField{name: "field", next: req.fields[max(i-1, 0)], value: req.body[i*8 : i*8+8]}
		}
		inFlight[n%heapInFlight] = req
		r := rng.Uint64()
		if r%10 == 0 {
			id := uint64(w) + uint64(c.workers)*((r>>8)%own)
			gens[id]++
			k, v = appendKVKey(k[:0], id), appendKVValue(v[:0], id, gens[id])
			if err := s.Set(k, v); err != nil {
				hw.err = err
				return
			}
		} else {
			id := (r >> 8) % uint64(c.entries)
			k = appendKVKey(k[:0], id)
			dst, ok = s.Get(dst[:0], k)
			if !ok {
				hw.misses++
			} else if _, good := checkKVValue(dst, id); !good {
				hw.corrupt++
			}
		}
		l := time.Since(due)
		hw.lat.record(l)
		if l > stallLate {
			hw.late = append(hw.late, lateOp{due, w})
		}
		hw.ops++
	}
}

// printHeap prints a table per setting, a column per store, then the
// issue's targets with kv.Map's ratios.
func printHeap(w io.Writer, cfg *heapConfig, results []heapResult) {
	fmt.Fprintf(w, "memkit heap: %d entries, %d ops/s (90%% Get, 10%% overwrite) from %d goroutines for %v, %d B garbage per op\n",
		cfg.entries, cfg.rate, cfg.workers, cfg.duration, cfg.garbage)
	fmt.Fprintf(w, "%s, %s, GOMAXPROCS=%d\n", versionLine(), cpuModel(), runtime.GOMAXPROCS(0))
	for _, setting := range cfg.settings {
		var col []heapResult
		for _, r := range results {
			if r.Setting == setting {
				col = append(col, r)
			}
		}
		if len(col) == 0 {
			continue
		}
		what := "GOGC=100"
		if setting == "memlimit" {
			what = fmt.Sprintf("GOGC=100, GOMEMLIMIT=%s (1.6× the data)", stats.FormatBytes(uint64(col[0].GoMemLimit)))
		}
		fmt.Fprintf(w, "\n%s, data (keys + values) %s\n", what, stats.FormatBytes(uint64(col[0].DataBytes)))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "\t")
		for _, r := range col {
			fmt.Fprintf(tw, "%s\t", r.Store)
		}
		fmt.Fprintln(tw)
		row := func(name string, f func(r *heapResult) string) {
			fmt.Fprintf(tw, "%s\t", name)
			for i := range col {
				fmt.Fprintf(tw, "%s\t", f(&col[i]))
			}
			fmt.Fprintln(tw)
		}
		bytesOf := func(v uint64) string { return stats.FormatBytes(v) }
		row("RSS", func(r *heapResult) string { return bytesOf(r.RSS) })
		row("RSS / data", func(r *heapResult) string { return fmt.Sprintf("%.2f", float64(r.RSS)/float64(r.DataBytes)) })
		row("peak RSS", func(r *heapResult) string { return bytesOf(r.PeakRSS) })
		row("CPU per op", func(r *heapResult) string { return formatMicros(r.CPUPerOp) })
		row("GC cycles", func(r *heapResult) string { return strconv.Itoa(int(r.GCCycles)) })
		row("forced GC CPU, empty", func(r *heapResult) string { return fmt.Sprintf("%.1fms", r.ForcedGCEmpty) })
		row("forced GC CPU, full", func(r *heapResult) string { return fmt.Sprintf("%.1fms", r.ForcedGCFull) })
		row("sender wake-ups/s", func(r *heapResult) string { return fmt.Sprintf("%.0f", float64(r.Wakeups)/r.Seconds) })
		row("context switches/s", func(r *heapResult) string { return fmt.Sprintf("%.0f", float64(r.CtxSwitches)/r.Seconds) })
		row("ops/s reached", func(r *heapResult) string { return fmt.Sprintf("%.0f", r.OpsPerSec) })
		row("p50 latency", func(r *heapResult) string { return formatMicros(r.P50) })
		row("p99 latency", func(r *heapResult) string { return formatMicros(r.P99) })
		row("p99.9 latency", func(r *heapResult) string { return formatMicros(r.P999) })
		row("process stalls (ops in them)", func(r *heapResult) string {
			return fmt.Sprintf("%d (%.2f%%)", r.Stalls, 100*float64(r.StallOps)/float64(max(r.Ops, 1)))
		})
		row("lost keys", func(r *heapResult) string { return strconv.FormatUint(r.Lost, 10) })
		row("Get misses in the run", func(r *heapResult) string { return strconv.FormatUint(r.Misses, 10) })
		row("fill time", func(r *heapResult) string { return fmt.Sprintf("%.1fs", r.FillSec) })
		tw.Flush()
		for _, r := range col {
			if r.Warning != "" {
				fmt.Fprintln(w, r.Warning)
			}
		}
	}
	fmt.Fprintln(w, "\nstores:")
	for _, s := range cfg.stores {
		fmt.Fprintf(w, "  %-9s  %s\n", s, kvImplDocs[s])
	}
	fmt.Fprintf(w, `CPU per op is the process's getrusage time over the measured run (the
senders' included) per operation; forced GC CPU is getrusage around one
runtime.GC run on one P (median of 5; on two, runtime.GC spins up to
several ms waiting for the background sweeper, whatever the heap), at the
end of the run with the map ("full") and then in the same process with the
map closed and dropped ("empty"). Latency is from each operation's due time
and includes the wait for the sender's next tick (up to --tick, %v; the
senders are staggered) and the Go timer's lateness (up to ~1ms), in every
store's latencies alike. A sender sleeps only when nothing is due and then
until its next tick, not until the next operation: each wake-up costs the
process 2.5-5µs of scheduler and futex work, more than a Get (under
perf, the park and wake path was 40%% of a store's process with a sleep per
operation, 24%% with a 1ms tick). Sender
wake-ups and context switches are the measured run's, per second. A process
stall is a time when every sender was over %v late at once; p99.9 is
the latency 0.1%% of the operations exceed, so a run whose stalls hold more
than 0.1%% of them has its p99.9 set by how long the stalls were, which
varies from run to run and shows in the harness column, with no store, too.
`, cfg.tick, stallLate)
	printHeapTargets(w, results)
}

// printHeapTargets prints issue 22's targets for the memkit column with the
// measured ratios, where the run has the stores they compare.
func printHeapTargets(w io.Writer, results []heapResult) {
	get := func(store, setting string) *heapResult {
		for i := range results {
			if results[i].Store == store && results[i].Setting == setting {
				return &results[i]
			}
		}
		return nil
	}
	mk, ml := get("memkit", "gogc"), get("memkit", "memlimit")
	if mk == nil && ml == nil {
		return
	}
	fmt.Fprintln(w, "\ntargets (issue 22), kv.Map:")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	line := func(target string, ratio float64, ok bool) {
		fmt.Fprintf(w, "  %-52s %6.2f  %s\n", target, ratio, verdict(ok))
	}
	var lost uint64
	for _, m := range []*heapResult{mk, ml} {
		if m == nil {
			continue
		}
		bound := 1.10*float64(m.DataBytes) + 64<<20
		line("RSS ≤ 1.10× data + 64 MiB, "+m.Setting+" (RSS / bound)", float64(m.RSS)/bound, float64(m.RSS) <= bound)
		d := m.ForcedGCFull - m.ForcedGCEmpty
		fmt.Fprintf(w, "  %-52s %+5.1fms %s\n", "forced GC full − empty within 2 ms, "+m.Setting, d, verdict(d <= 2 && d >= -2))
		lost += m.Lost
	}
	if fc := get("fastcache", "gogc"); fc != nil && mk != nil {
		r := mk.CPUPerOp / fc.CPUPerOp
		line("CPU/op ≤ 0.9× fastcache's, GOGC=100", r, r <= 0.9)
		line("p99.9 ≤ fastcache's, GOGC=100 (ratio)", mk.P999/fc.P999, mk.P999 <= fc.P999)
	}
	if fc := get("fastcache", "memlimit"); fc != nil && ml != nil {
		line("p99.9 ≤ fastcache's, GOMEMLIMIT (ratio)", ml.P999/fc.P999, ml.P999 <= fc.P999)
	}
	for _, std := range []string{"idmap", "stdmap"} {
		if sm := get(std, "gogc"); sm != nil && mk != nil {
			r := mk.CPUPerOp / sm.CPUPerOp
			line("CPU/op ≤ 0.7× the "+std+"'s, GOGC=100", r, r <= 0.7)
		}
		if sm := get(std, "memlimit"); sm != nil && ml != nil {
			r := ml.CPUPerOp / sm.CPUPerOp
			line("CPU/op ≤ 0.5× the "+std+"'s, GOMEMLIMIT=1.6× data", r, r <= 0.5)
		}
	}
	fmt.Fprintf(w, "  %-52s %6d  %s\n", "lost keys = 0", lost, verdict(lost == 0))
	// The floor under every column: what the senders cost with no store.
	for _, setting := range []string{"gogc", "memlimit"} {
		if h := get("harness", setting); h != nil {
			fmt.Fprintf(w, "  %-52s CPU/op %s, p99.9 %s\n", "the harness alone (no store), "+setting,
				formatMicros(h.CPUPerOp), formatMicros(h.P999))
		}
	}
}
