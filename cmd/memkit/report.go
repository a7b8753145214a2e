package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memkit/memkit/stats"
)

// pkgPath is the pkg: line of the bench format.
const pkgPath = "github.com/memkit/memkit/cmd/memkit"

// env is where and how a run was measured; every output format records it.
type env struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	CPU        string `json:"cpu"`
	Go         string `json:"go"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Date       string `json:"date"` // RFC 3339, UTC
	Benchtime  string `json:"benchtime"`
	Count      int    `json:"count"`
}

func readEnv(cfg *benchConfig) env {
	return env{
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		CPU:        cpuModel(),
		Go:         runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Date:       time.Now().UTC().Format(time.RFC3339),
		Benchtime:  cfg.benchtime,
		Count:      cfg.count,
	}
}

// cpuModel is the first "model name" of /proc/cpuinfo, or GOARCH where there
// is none (other systems, most arm64 Linux machines).
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for line := range strings.Lines(string(data)) {
			k, v, ok := strings.Cut(line, ":")
			if ok && strings.TrimSpace(k) == "model name" {
				if v = strings.TrimSpace(v); v != "" {
					return v
				}
			}
		}
	}
	return runtime.GOARCH
}

// writeBench prints the Go benchmark format (golang.org/design/14313), one
// line per run, so that benchstat reads it: `benchstat -col /impl`. The date
// and benchtime are comments, not configuration, so that two runs still
// compare.
func writeBench(w io.Writer, e env, results []result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "goos: %s\ngoarch: %s\npkg: %s\ncpu: %s\ngo: %s\n", e.GOOS, e.GOARCH, pkgPath, e.CPU, e.Go)
	fmt.Fprintf(bw, "# date: %s\n# benchtime: %s\n", e.Date, e.Benchtime)
	suffix := ""
	if e.GOMAXPROCS != 1 {
		suffix = "-" + strconv.Itoa(e.GOMAXPROCS)
	}
	for _, r := range results {
		for _, run := range r.runs {
			fmt.Fprintf(bw, "Benchmark%s%s\t%s\t%s\n", r.bench.name(), suffix, run.String(), run.MemString())
		}
	}
	return bw.Flush()
}

// jsonResult is one bench in the JSON output: medians over its runs.
type jsonResult struct {
	Name        string             `json:"name"`
	Workload    string             `json:"workload"`
	Impl        string             `json:"impl"`
	Runs        int                `json:"runs"` // --count
	N           int                `json:"n"`    // iterations in the first run
	NsPerOp     float64            `json:"ns_per_op"`
	BytesPerOp  float64            `json:"bytes_per_op"`
	AllocsPerOp float64            `json:"allocs_per_op"`
	Extra       map[string]float64 `json:"extra,omitempty"`
	// RatioToMemkit is NsPerOp divided by that of impl memkit in the same
	// workload; it is absent when memkit was not run.
	RatioToMemkit float64 `json:"ratio_to_memkit,omitempty"`
}

// jsonReport is the JSON output.
type jsonReport struct {
	Env     env          `json:"env"`
	Results []jsonResult `json:"results"`
}

func writeJSON(w io.Writer, e env, results []result) error {
	rep := jsonReport{Env: e, Results: []jsonResult{}}
	for i, s := range summarize(results) {
		bn := results[i].bench
		rep.Results = append(rep.Results, jsonResult{
			Name: bn.name(), Workload: bn.workload, Impl: bn.impl,
			Runs: len(results[i].runs), N: results[i].runs[0].N,
			NsPerOp: s.ns, BytesPerOp: s.bytes, AllocsPerOp: s.allocs,
			Extra: s.extra, RatioToMemkit: s.ratio,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// writeTable prints the environment, then a table per workload with a row
// per impl: medians of ns/op, B/op and allocs/op, the extra metrics, and
// ns/op as a ratio of memkit's.
func writeTable(w io.Writer, e env, results []result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "goos: %s\ngoarch: %s\ncpu: %s\ngo: %s\ngomaxprocs: %d\ndate: %s\nbenchtime: %s\ncount: %d\n",
		e.GOOS, e.GOARCH, e.CPU, e.Go, e.GOMAXPROCS, e.Date, e.Benchtime, e.Count)
	sums := summarize(results)
	width := len("impl")
	for _, r := range results {
		width = max(width, len(r.bench.impl))
	}
	for i := 0; i < len(results); {
		wl := results[i].bench.workload
		fmt.Fprintf(bw, "\n%s", wl)
		if n := results[i].bench.slices(); n > 1 {
			fmt.Fprintf(bw, " (each run %d slices, alternating the impls)", n)
		}
		fmt.Fprintln(bw)
		fmt.Fprintf(bw, "  %-*s %12s %12s %10s %7s  %s\n", width, "impl", "ns/op", "B/op", "allocs/op", "ratio", "extra")
		for ; i < len(results) && results[i].bench.workload == wl; i++ {
			s := sums[i]
			line := fmt.Sprintf("  %-*s %12s %12.0f %10.0f %7s  %s", width, results[i].bench.impl,
				formatNs(s.ns), s.bytes, s.allocs, formatRatioColumn(s.ratio), formatExtra(s.extra))
			fmt.Fprintln(bw, strings.TrimRight(line, " "))
		}
	}
	return bw.Flush()
}

// formatNs prints ns/op with three or more significant digits.
func formatNs(ns float64) string {
	switch {
	case ns < 10:
		return strconv.FormatFloat(ns, 'f', 2, 64)
	case ns < 100:
		return strconv.FormatFloat(ns, 'f', 1, 64)
	}
	return strconv.FormatFloat(ns, 'f', 0, 64)
}

// formatRatioColumn prints the ratio column of the text and HTML tables:
// ns/op divided by memkit's with two decimals, or "-" where memkit did not
// run (ratio 0).
func formatRatioColumn(ratio float64) string {
	if ratio > 0 {
		return strconv.FormatFloat(ratio, 'f', 2, 64)
	}
	return "-"
}

// formatCount prints B/op, allocs/op and the charts' value labels: as
// formatNs does, less trailing zeros, so that 1 stays 1 and the
// millionths of an alloc that a GC cycle spreads over a run print as 0.
func formatCount(v float64) string {
	s := formatNs(v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		return "0"
	}
	return s
}

// formatExtra prints extra metrics as unit=value, sorted by unit; a unit
// ending in -B is a byte count and prints in binary units, a whole number
// prints whole, anything else with three significant digits.
func formatExtra(m map[string]float64) string {
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		v := m[k]
		switch {
		case strings.HasSuffix(k, "-B") && v >= 0:
			fmt.Fprintf(&b, "%s=%s", k, stats.FormatBytes(uint64(v)))
		case v == math.Trunc(v) && math.Abs(v) < 1e15:
			fmt.Fprintf(&b, "%s=%d", k, int64(v))
		default:
			fmt.Fprintf(&b, "%s=%.3g", k, v)
		}
	}
	return b.String()
}
