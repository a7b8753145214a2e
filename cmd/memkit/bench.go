package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schollz/progressbar/v3"
)

// defaultBenchtime keeps a default run (every bench, --count 1) near two
// minutes on two cores.
const defaultBenchtime = "500ms"

const benchUsage = `usage: memkit bench [flags]

Runs every workload (--list names them and says what each measures) against
memkit and the allocators it is compared with, and prints, per workload,
each implementation's ns/op, B/op, allocs/op, extra metrics, and its ns/op
as a ratio of memkit's. Benchmarks are named
Workload/param/impl=name, e.g. GetPut/size=4KiB/impl=syncpool. With
--html FILE it also writes FILE, a self-contained HTML report: charts of
ns/op and allocs/op per workload as ratios to memkit, the machine and the
command line. A progress bar is drawn on stderr when it is a terminal.
On Linux, a run during which other processes used more than a fifth of a
CPU is named on stderr: its figure measures the machine's load.

flags:
`

// benchConfig is the parsed command line of memkit bench.
type benchConfig struct {
	filter    *regexp.Regexp
	count     int
	benchtime string
	format    string // table, bench or json
	progress  bool
	html      string // --html: where to write the HTML report, if anywhere
	list      bool   // --list: name the workloads instead of running them
}

func parseBenchFlags(stdout io.Writer, args []string) (*benchConfig, error) {
	fs := flag.NewFlagSet("memkit bench", flag.ContinueOnError)
	filter := fs.String("filter", "", "run only benchmarks whose full name matches this `regexp`")
	count := fs.Int("count", 1, "run each benchmark `n` times; the table shows the median")
	benchtime := fs.String("benchtime", defaultBenchtime, "run each benchmark for this `duration`, or 100x for 100 iterations")
	format := fs.String("format", "table", "output `format`: table, bench (Go benchmark text, for benchstat) or json")
	jsonOut := fs.Bool("json", false, "same as --format json")
	noProgress := fs.Bool("no-progress", false, "do not draw the progress bar (drawn only when stderr is a terminal)")
	html := fs.String("html", "", "also write an HTML report with a chart per workload to `file`")
	list := fs.Bool("list", false, "list the workloads that --filter selects, with what each measures, and exit")
	if err := parseFlags(fs, stdout, benchUsage, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usagef("bench: unexpected argument %q", fs.Arg(0))
	}
	re, err := regexp.Compile(*filter)
	if err != nil {
		return nil, usagef("bench: --filter: %v", err)
	}
	if *count < 1 {
		return nil, usagef("bench: --count %d: must be at least 1", *count)
	}
	if err := checkBenchtime(*benchtime); err != nil {
		return nil, usagef("bench: --benchtime %q: %v", *benchtime, err)
	}
	if *jsonOut {
		if *format != "table" && *format != "json" {
			return nil, usagef("bench: --json conflicts with --format %s", *format)
		}
		*format = "json"
	}
	if *format != "table" && *format != "bench" && *format != "json" {
		return nil, usagef("bench: --format %q: want table, bench or json", *format)
	}
	if *html != "" {
		if err := checkHTMLPath(*html); err != nil {
			return nil, usagef("bench: --html: %v", err)
		}
	}
	return &benchConfig{filter: re, count: *count, benchtime: *benchtime, format: *format, progress: !*noProgress, html: *html, list: *list}, nil
}

// checkBenchtime accepts what go test's -benchtime does: a positive
// duration, or a positive iteration count followed by x.
func checkBenchtime(s string) error {
	if n, ok := strings.CutSuffix(s, "x"); ok {
		if v, err := strconv.Atoi(n); err != nil || v < 1 {
			return errors.New("want a positive count, as in 100x")
		}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return errors.New("want a positive duration, as in 200ms, or a count, as in 100x")
	}
	return nil
}

// runBench is memkit bench.
func runBench(stdout, stderr io.Writer, args []string) error {
	cfg, err := parseBenchFlags(stdout, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	var sel []*bench
	for i := range benches {
		if cfg.filter.MatchString(benches[i].name()) {
			sel = append(sel, &benches[i])
		}
	}
	if len(sel) == 0 {
		return usagef("bench: --filter %q matches no benchmark (memkit bench --list names them)", cfg.filter)
	}
	if cfg.list {
		return writeList(stdout, sel)
	}
	e := readEnv(cfg)
	var bar *progressbar.ProgressBar
	if cfg.progress && isTerminal(stderr) {
		bar = progressbar.NewOptions(len(sel)*cfg.count,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish())
	}
	results, err := measure(sel, cfg, func(name string, done bool) {
		if bar == nil {
			return
		}
		if done {
			bar.Add(1)
		} else {
			bar.Describe(name)
		}
	})
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return err
	}
	writeBusyNotes(stderr, results)
	switch cfg.format {
	case "bench":
		err = writeBench(stdout, e, results)
	case "json":
		err = writeJSON(stdout, e, results)
	default:
		err = writeTable(stdout, e, results)
	}
	if err != nil || cfg.html == "" {
		return err
	}
	return writeHTMLFile(cfg.html, args, e, results)
}

// result is one bench's measurements: a testing.BenchmarkResult per run.
type result struct {
	bench *bench
	runs  []testing.BenchmarkResult
	// busy[i] is the CPU time other processes used during run i, and
	// the run's wall time, where the system says (see othersCPU).
	busy []runBusy
}

// othersNow is othersCPU, a variable so that a test of what memkit bench
// writes on stderr can stub the machine's load out.
var othersNow = othersCPU

// runBusy is the CPU time other processes used during a run, and the
// run's wall time, calibration included.
type runBusy struct{ others, wall time.Duration }

// busyShare is the part of one CPU that other processes may use during a
// run before memkit bench says that the run measured the machine's load,
// and busyFloor the least CPU time it names: /proc/stat counts in 10ms
// ticks per CPU, so a short run's figure is exact only to a few ticks.
// A memkit bench alone on the machine leaves the others a percent or two
// (the system's own daemons); a test suite or a build beside it takes
// most of a CPU, and the 2× outliers of ExtentMallocFreeParallel came
// from runs that shared a CPU with one.
const (
	busyShare = 0.2
	busyFloor = 50 * time.Millisecond
)

// writeBusyNotes tells w of each run during which other processes used
// more than busyShare of a CPU (and at least busyFloor): its figure,
// which may be twice an idle machine's, is the machine's load.
func writeBusyNotes(w io.Writer, results []result) {
	for _, r := range results {
		for i, rb := range r.busy {
			if rb.others >= busyFloor && float64(rb.others) > busyShare*float64(rb.wall) {
				fmt.Fprintf(w, "memkit bench: %s run %d of %d: other processes used %v of CPU in its %v (%.0f%% of a CPU), so its figure measures the machine's load; run it again on an idle machine\n",
					r.bench.name(), i+1, len(r.busy), rb.others.Round(time.Millisecond), rb.wall.Round(time.Millisecond),
					100*float64(rb.others)/float64(rb.wall))
			}
		}
	}
}

// measure runs each selected bench cfg.count times, in rounds over the whole
// selection so that drift in the machine's load spreads over all of them.
// A bench with rounds makes each of its runs of rounds slices, each on its
// share of the benchtime, alternating with the other impls of its workload
// (A B A B ...), so that the impls a row compares see the same moments of
// the machine; the run is the slices' totals (see combine). A bench's group
// (see bench.group) widens who alternates. Groups still run one after
// another, so one family's data (the kv rows' maps) is not live while
// another's runs.
// progress is told of each bench before (done == false) and after it runs.
func measure(sel []*bench, cfg *benchConfig, progress func(name string, done bool)) ([]result, error) {
	// testing.Benchmark reads the iteration target from the test.benchtime
	// flag; register it (a no-op inside a test binary), and put back what
	// was there, since inside a test binary later benchmarks read it too.
	testing.Init()
	bt := flag.Lookup("test.benchtime")
	defer bt.Value.Set(bt.Value.String())
	results := make([]result, len(sel))
	slices := make([][]testing.BenchmarkResult, len(sel))
	busy := make([]runBusy, len(sel))
	groups := groupsOf(sel)
	for range cfg.count {
		for _, g := range groups {
			rounds := 1
			for _, i := range g {
				rounds = max(rounds, sel[i].slices())
			}
			for round := range rounds {
				for _, i := range g {
					bn := sel[i]
					if round >= bn.slices() {
						continue
					}
					t := shareOf(cfg.benchtime, bn.slices())
					if bn.once {
						t = "1x"
					}
					progress(bn.name(), false)
					r, b, err := runOne(bn, t, bt)
					if err != nil {
						return nil, err
					}
					slices[i] = append(slices[i], r)
					busy[i].others += b.others
					busy[i].wall += b.wall
					progress(bn.name(), true)
				}
			}
			for _, i := range g {
				results[i].bench = sel[i]
				results[i].runs = append(results[i].runs, combine(slices[i]))
				if busy[i].wall > 0 {
					results[i].busy = append(results[i].busy, busy[i])
				}
				slices[i], busy[i] = slices[i][:0], runBusy{}
			}
		}
	}
	return results, nil
}

// groupsOf is sel's indices by groupName, each group in sel's order and
// the groups in the order of their first bench.
func groupsOf(sel []*bench) [][]int {
	var groups [][]int
	at := make(map[string]int)
	for i, bn := range sel {
		g, ok := at[bn.groupName()]
		if !ok {
			g = len(groups)
			at[bn.groupName()] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// runOne runs bn once for benchtime t, and reports the CPU other processes
// used meanwhile, where the system says (zero otherwise).
func runOne(bn *bench, t string, bt *flag.Flag) (testing.BenchmarkResult, runBusy, error) {
	if err := bt.Value.Set(t); err != nil {
		return testing.BenchmarkResult{}, runBusy{}, err
	}
	o0, ok := othersNow()
	start := time.Now()
	r := testing.Benchmark(bn.run)
	if r.N == 0 {
		return r, runBusy{}, fmt.Errorf("bench %s failed", bn.name())
	}
	var b runBusy
	if o1, ok1 := othersNow(); ok && ok1 {
		// max: the machine's ticks and the process's own time are
		// counted apart, so an idle run's difference may dip below 0.
		b = runBusy{max(o1-o0, 0), time.Since(start)}
	}
	return r, b, nil
}

// combine is the run that slices make together: their iterations, time,
// allocations and bytes added up, and each extra metric (all per op, or a
// level such as live bytes) weighted by the slice's iterations. So a
// count of cycles per op (GC cycles, whole numbers in each slice) is the
// total over the run, as one run of the whole benchtime would count it.
func combine(slices []testing.BenchmarkResult) testing.BenchmarkResult {
	if len(slices) == 1 {
		return slices[0]
	}
	var c testing.BenchmarkResult
	for _, r := range slices {
		c.N += r.N
		c.T += r.T
		c.MemAllocs += r.MemAllocs
		c.MemBytes += r.MemBytes
		c.Bytes = r.Bytes
		for k, v := range r.Extra {
			if c.Extra == nil {
				c.Extra = map[string]float64{}
			}
			c.Extra[k] += v * float64(r.N)
		}
	}
	for k := range c.Extra {
		c.Extra[k] /= float64(c.N)
	}
	return c
}

// shareOf is the benchtime of one of rounds runs that share benchtime (a
// form checkBenchtime accepted): a duration or an iteration count divided
// by rounds, at least one iteration or one millisecond.
func shareOf(benchtime string, rounds int) string {
	if rounds <= 1 {
		return benchtime
	}
	if n, ok := strings.CutSuffix(benchtime, "x"); ok {
		v, _ := strconv.Atoi(n)
		return strconv.Itoa(max(v/rounds, 1)) + "x"
	}
	d, _ := time.ParseDuration(benchtime)
	return max(d/time.Duration(rounds), time.Millisecond).String()
}

// summary is a result's medians over its runs, and its ratio to the
// baseImpl of the same workload (0 when that impl was not run).
type summary struct {
	ns, bytes, allocs float64
	extra             map[string]float64
	ratio             float64
}

func summarize(results []result) []summary {
	out := make([]summary, len(results))
	base := map[string]float64{}
	for i, r := range results {
		s := &out[i]
		s.ns = median(r.runs, func(b testing.BenchmarkResult) float64 { return float64(b.T.Nanoseconds()) / float64(b.N) })
		s.bytes = median(r.runs, func(b testing.BenchmarkResult) float64 { return float64(b.MemBytes) / float64(b.N) })
		s.allocs = median(r.runs, func(b testing.BenchmarkResult) float64 { return float64(b.MemAllocs) / float64(b.N) })
		for k := range r.runs[0].Extra {
			if s.extra == nil {
				s.extra = map[string]float64{}
			}
			s.extra[k] = median(r.runs, func(b testing.BenchmarkResult) float64 { return b.Extra[k] })
		}
		if r.bench.impl == baseImpl {
			base[r.bench.workload] = s.ns
		}
	}
	for i, r := range results {
		if b := base[r.bench.workload]; b > 0 {
			out[i].ratio = out[i].ns / b
		}
	}
	return out
}

func median(runs []testing.BenchmarkResult, f func(testing.BenchmarkResult) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}
