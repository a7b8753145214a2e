package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

// runCLI runs the command with args and returns its stdout.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(&out, &errb, args)
	return out.String(), err
}

// quick is the cheapest bench selection: one size of GetPut, every impl.
var quick = []string{"bench", "--filter", "GetPut/size=64B", "--benchtime", "1ms", "--no-progress"}

func TestRun_Table(t *testing.T) {
	out, err := runCLI(t, quick...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"goos: ", "goarch: ", "cpu: ", "go: go1.", "gomaxprocs: ", "date: ", "benchtime: 1ms", "\nGetPut/size=64B\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, im := range byteImpls {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(im.name) + ` +\d`).MatchString(out) {
			t.Errorf("no row for impl %s:\n%s", im.name, out)
		}
	}
	// 0 allocs/op, ratio 1.00. B/op may round up to a few bytes when a GC
	// cycle lands in so short a run: the pool's decay pass runs after it on
	// the finalizer goroutine, and testing charges every goroutine's
	// allocations to the benchmark. It must stay below one 64-byte buffer.
	// Under the race detector sync.Pool drops Puts at random: memkit's row
	// then allocates.
	m := regexp.MustCompile(`(?m)^  memkit +\S+ +(\d+) +0 +1\.00$`).FindStringSubmatch(out)
	if m == nil {
		m = []string{"", "no row"}
	}
	if bytes, err := strconv.Atoi(m[1]); !race.Enabled && (err != nil || bytes >= 64) {
		t.Errorf("memkit row is not under 64 B/op, 0 allocs/op, ratio 1.00:\n%s", out)
	}
	if strings.Contains(out, "GetPutParallel") {
		t.Errorf("filter GetPut/size=64B selected GetPutParallel:\n%s", out)
	}
}

func TestRun_BenchFormat(t *testing.T) {
	out, err := runCLI(t, "bench", "--filter", "GetPut/size=64B/impl=(memkit|make)$", "--benchtime", "10x", "--count", "2", "--format", "bench", "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	var (
		config  = regexp.MustCompile(`^[a-z][^\s:A-Z]*: \S`)
		comment = regexp.MustCompile(`^# `)
		result  = regexp.MustCompile(`^Benchmark(GetPut/size=64B/impl=(memkit|make))(-\d+)?\t +10\t +[0-9.]+ ns/op\t +\d+ B/op\t +\d+ allocs/op$`)
	)
	runs := map[string]int{}
	for line := range strings.Lines(strings.TrimSuffix(out, "\n")) {
		line = strings.TrimSuffix(line, "\n")
		if m := result.FindStringSubmatch(line); m != nil {
			runs[m[1]]++
			continue
		}
		if !config.MatchString(line) && !comment.MatchString(line) {
			t.Errorf("line is neither configuration nor a result: %q", line)
		}
	}
	for _, name := range []string{"GetPut/size=64B/impl=memkit", "GetPut/size=64B/impl=make"} {
		if runs[name] != 2 {
			t.Errorf("%s: %d result lines, want 2 (--count 2)\n%s", name, runs[name], out)
		}
	}
	for _, key := range []string{"goos", "goarch", "pkg", "cpu", "go"} {
		if !strings.Contains(out, "\n"+key+": ") && !strings.HasPrefix(out, key+": ") {
			t.Errorf("no %s: line:\n%s", key, out)
		}
	}
}

func TestRun_JSON(t *testing.T) {
	out, err := runCLI(t, append(quick, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Env.GOOS == "" || rep.Env.CPU == "" || rep.Env.GOMAXPROCS < 1 || rep.Env.Count != 1 {
		t.Errorf("env incomplete: %+v", rep.Env)
	}
	if len(rep.Results) != len(byteImpls) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(byteImpls))
	}
	for _, r := range rep.Results {
		if r.Workload != "GetPut/size=64B" || r.Name != r.Workload+"/impl="+r.Impl || r.NsPerOp <= 0 || r.Runs != 1 {
			t.Errorf("bad result %+v", r)
		}
		if r.Impl == "memkit" && r.RatioToMemkit != 1 {
			t.Errorf("memkit ratio_to_memkit = %v, want 1", r.RatioToMemkit)
		}
		if r.RatioToMemkit <= 0 {
			t.Errorf("%s: ratio_to_memkit = %v", r.Name, r.RatioToMemkit)
		}
	}
}

func TestRun_Errors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"version", "x"}, "no arguments"},
		{[]string{"bench", "--frobnicate"}, "flag provided but not defined: -frobnicate (run 'memkit bench -h' for its flags)"},
		{[]string{"demo", "--frobnicate"}, "demo: flag provided but not defined: -frobnicate (run 'memkit demo -h' for its flags)"},
		{[]string{"binarytrees", "-x"}, "binarytrees: flag provided but not defined: -x (run 'memkit binarytrees -h' for its flags)"},
		{[]string{"help", "frobnicate"}, `help: want one of bench, binarytrees, demo, heap, help, version, got "frobnicate"`},
		{[]string{"bench", "--filter", "NoSuchWorkload"}, `--filter "NoSuchWorkload" matches no benchmark`},
		{[]string{"bench", "--filter", "("}, "--filter"},
		{[]string{"bench", "--count", "0"}, "--count 0"},
		{[]string{"bench", "--benchtime", "fast"}, `--benchtime "fast"`},
		{[]string{"bench", "--benchtime", "0x"}, `--benchtime "0x"`},
		{[]string{"bench", "--format", "csv"}, `--format "csv"`},
		{[]string{"bench", "--json", "--format", "bench"}, "conflicts"},
		{[]string{"bench", "extra"}, `unexpected argument "extra"`},
	} {
		_, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %q: error %v, want one containing %q", tc.args, err, tc.want)
		}
		if !errors.As(err, new(usageError)) {
			t.Errorf("run %q: %v is not a usage error (exit 2)", tc.args, err)
		}
	}
}

func TestRun_VersionAndHelp(t *testing.T) {
	out, err := runCLI(t, "version")
	if err != nil || !regexp.MustCompile(`^memkit \S+ go\S+ \w+/\w+\n$`).MatchString(out) {
		t.Errorf("version: %q, %v", out, err)
	}
	out, err = runCLI(t, "bench", "-h")
	if err != nil || !strings.Contains(out, "-benchtime") || !strings.Contains(out, "usage: memkit bench") {
		t.Errorf("bench -h: %q, %v", out, err)
	}
}

// TestRun_Progress checks that the progress bar is drawn on stderr only
// when stderr is a terminal: piped or in a file, it would write a redraw
// per step.
func TestRun_Progress(t *testing.T) {
	bar := fmt.Sprintf("/%d", len(byteImpls))
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			defer func(f func(io.Writer) bool) { isTerminal = f }(isTerminal)
			isTerminal = func(io.Writer) bool { return tty }
			// An idle machine: no note of a run that shared the CPUs.
			defer func(f func() (time.Duration, bool)) { othersNow = f }(othersNow)
			othersNow = func() (time.Duration, bool) { return 0, false }
			var out, errb bytes.Buffer
			if err := run(&out, &errb, quick[:len(quick)-1]); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(errb.String(), bar); got != tty {
				t.Errorf("progress bar on stderr: %v; want %v: %q", got, tty, errb.String())
			}
			if !tty && errb.Len() > 0 {
				t.Errorf("stderr, not a terminal, got %q; want nothing", errb.String())
			}
			if strings.Contains(out.String(), bar) {
				t.Errorf("progress bar on stdout:\n%s", out.String())
			}
		})
	}
	// A pipe is not a terminal, whatever the test's own stderr is.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(w) || isTerminal(new(bytes.Buffer)) {
		t.Error("isTerminal reports a pipe or a buffer as a terminal")
	}
}

// TestRun_List checks memkit bench --list: every workload --filter selects,
// under its family's description, with its impls, and nothing run.
func TestRun_List(t *testing.T) {
	out, err := runCLI(t, "bench", "--list")
	if err != nil {
		t.Fatal(err)
	}
	for i := range benches {
		bn := &benches[i]
		if !strings.Contains(out, family(bn.workload)+": "+workloadDocs[family(bn.workload)]+"\n") {
			t.Errorf("--list lacks the description of %s", family(bn.workload))
		}
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(bn.workload) + ` .*\b` + regexp.QuoteMeta(bn.impl) + `\b`).MatchString(out) {
			t.Errorf("--list lacks %s", bn.name())
		}
	}
	if strings.Contains(out, "ns/op") || strings.Contains(out, "goos:") {
		t.Errorf("--list ran benchmarks:\n%s", out)
	}
	out, err = runCLI(t, "bench", "--list", "--filter", "^GetPut/size=64B/")
	if err != nil {
		t.Fatal(err)
	}
	want := "GetPut: " + workloadDocs["GetPut"] + "\n  GetPut/size=64B  "
	if !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 2 {
		t.Errorf("--list --filter ^GetPut/size=64B/:\n%s\nwant one family, one workload, starting %q", out, want)
	}
}

// TestWorkloadDocs checks that every registered workload family says what
// it measures, and that no description is left for a family that is gone.
func TestWorkloadDocs(t *testing.T) {
	seen := map[string]bool{}
	for i := range benches {
		f := family(benches[i].workload)
		seen[f] = true
		if workloadDocs[f] == "" {
			t.Errorf("workload family %s has no entry in workloadDocs", f)
		}
	}
	for f := range workloadDocs {
		if !seen[f] {
			t.Errorf("workloadDocs describes %s, which no bench registers", f)
		}
	}
}

// TestRun_Help checks memkit help and memkit help <command>.
func TestRun_Help(t *testing.T) {
	out, err := runCLI(t, "help")
	if err != nil || !strings.Contains(out, "usage: memkit <command>") || !strings.Contains(out, "--list") {
		t.Errorf("help: %v\n%s", err, out)
	}
	for _, cmd := range []string{"bench", "demo", "binarytrees"} {
		help, err := runCLI(t, "help", cmd)
		flags, err2 := runCLI(t, cmd, "-h")
		if err != nil || err2 != nil || help != flags || !strings.Contains(help, "usage: memkit "+cmd) {
			t.Errorf("help %s (%v) and %s -h (%v) differ or lack the usage:\n%s\n---\n%s", cmd, err, cmd, err2, help, flags)
		}
	}
}

// TestRun_BurstIdle runs BurstIdle with a small burst and checks its
// metrics, and that the Bounded pool stayed within its budget.
func TestRun_BurstIdle(t *testing.T) {
	defer func(c int) { burst.count = c }(burst.count)
	burst.count = 64
	out, err := runCLI(t, "bench", "--filter", "BurstIdle/.*impl=(memkit|memkit-bounded|syncpool)$", "--json", "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 3 {
		t.Fatalf("%d results, want 3:\n%s", len(rep.Results), out)
	}
	for _, r := range rep.Results {
		if r.N != 1 {
			t.Errorf("%s ran %d iterations, want 1", r.Name, r.N)
		}
		if _, ok := r.Extra["retained-B"]; !ok {
			t.Errorf("%s: no retained-B in %v", r.Name, r.Extra)
		}
		if _, ok := r.Extra["retained-%"]; !ok {
			t.Errorf("%s: no retained-%% in %v", r.Name, r.Extra)
		}
		peak, ok := r.Extra["peak-reserved-B"]
		if ok != strings.HasPrefix(r.Impl, "memkit") {
			t.Errorf("%s: peak-reserved-B reported: %v, want it for memkit impls only", r.Name, ok)
		}
		// The burst fits the budget: the region is all the pool reserves.
		if r.Impl == "memkit-bounded" && (peak <= 0 || peak > boundedBudget || r.Extra["heap-fallbacks"] != 0) {
			t.Errorf("memkit-bounded peak-reserved-B = %v, heap-fallbacks = %v; want in (0, %d], 0",
				peak, r.Extra["heap-fallbacks"], boundedBudget)
		}
	}
}

// TestBoundedBudgetFits checks that memkit-bounded serves the sizes of
// every timed workload from its region: with heap fallbacks its rows would
// measure make.
func TestBoundedBudgetFits(t *testing.T) {
	var impl byteImpl
	for _, im := range byteImpls {
		if im.name == "memkit-bounded" {
			impl = im
		}
	}
	a := impl.new()
	for _, n := range slices.Concat(sizes, logUniformSizes(64, 64<<10), overBoundarySizes(64<<10)) {
		a.put(a.get(n))
	}
	// CrossGoroutine holds up to a channel's worth.
	held := make([]buf, crossQueue)
	for i := range held {
		held[i].b, held[i].h = a.get(4 << 10)
	}
	for _, x := range held {
		a.put(x.b, x.h)
	}
	var st memkit.Stats
	a.(memkitPool).ReadStats(&st)
	if st.HeapFallbacks != 0 {
		t.Errorf("memkit-bounded fell back to the heap %d times; raise boundedBudget", st.HeapFallbacks)
	}
	if p := a.(memkitPool).Policy(); p != bytepool.Bounded {
		t.Errorf("memkit-bounded has policy %v", p)
	}
}

func TestRegister_Duplicate(t *testing.T) {
	memtest.CheckPanic(t, "memkit: bench GetPut/size=64B/impl=memkit registered twice", func() {
		register(bench{workload: "GetPut/size=64B", impl: "memkit"})
	})
}

// TestMeasure_Rounds checks that a bench with rounds runs rounds slices per
// count on their share of the benchtime, alternating with the other impls
// of its workload and with the benches of its group, that groups still
// run one after another, and that a run is its slices' totals.
func TestMeasure_Rounds(t *testing.T) {
	var order []string
	mk := func(workload, impl string, rounds int) *bench {
		bn := &bench{workload: workload, impl: impl, rounds: rounds}
		bn.run = func(b *testing.B) {
			if b.N == 1 {
				order = append(order, impl) // testing.Benchmark's first call
			}
			for range b.N {
			}
		}
		return bn
	}
	c1 := mk("C", "c1", 3)
	c1.group = "A" // as KVParallel/op=get is in KV/op=get's group
	sel := []*bench{mk("A", "a1", 3), mk("A", "a2", 3), mk("A", "a3", 0), mk("B", "b1", 0), c1}
	defer func(f func() (time.Duration, bool)) { othersNow = f }(othersNow)
	othersNow = func() (time.Duration, bool) { return 0, false }
	res, err := measure(sel, &benchConfig{count: 2, benchtime: "30x"}, func(string, bool) {})
	if err != nil {
		t.Fatal(err)
	}
	want := "a1 a2 a3 c1 a1 a2 c1 a1 a2 c1 b1 a1 a2 a3 c1 a1 a2 c1 a1 a2 c1 b1"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("runs in order %q, want %q", got, want)
	}
	for i := range sel {
		if n := len(res[i].runs); n != 2 {
			t.Errorf("%s: %d runs, want 2 (--count 2)", sel[i].name(), n)
		}
		for _, r := range res[i].runs {
			if r.N != 30 { // three slices of 10 iterations, or one of 30
				t.Errorf("%s: a run of %d iterations, want 30", sel[i].name(), r.N)
			}
		}
	}
	for _, tc := range []struct {
		in     string
		rounds int
		want   string
	}{{"500ms", 5, "100ms"}, {"500ms", 1, "500ms"}, {"100x", 5, "20x"}, {"3x", 5, "1x"}, {"2ms", 5, "1ms"}} {
		if got := shareOf(tc.in, tc.rounds); got != tc.want {
			t.Errorf("shareOf(%q, %d) = %q, want %q", tc.in, tc.rounds, got, tc.want)
		}
	}
	// Two slices: 1 GC cycle in 100 iterations and 0 in 300 make 0.25
	// cycles per 100 over the run; time, allocations and bytes add up.
	c := combine([]testing.BenchmarkResult{
		{N: 100, T: time.Second, MemAllocs: 7, MemBytes: 70, Extra: map[string]float64{"GCs/100-op": 1}},
		{N: 300, T: 2 * time.Second, MemAllocs: 5, MemBytes: 50, Extra: map[string]float64{"GCs/100-op": 0}},
	})
	if c.N != 400 || c.T != 3*time.Second || c.MemAllocs != 12 || c.MemBytes != 120 || c.Extra["GCs/100-op"] != 0.25 {
		t.Errorf("combine = %+v", c)
	}
}
