package main

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memkit/memkit/stats"
)

// This file is memkit bench --html: a report page that needs nothing but
// itself to be viewed, small enough to attach to an issue. Each workload
// gets a section with its charts (html_chart.go), laid out in a wrapping
// row and never scaled, and a table of its figures, each with its unit;
// the page also holds the machine description and the command line. Plot
// measures text in Liberation Sans; the page asks for it and falls back
// to Arial or Helvetica, which have the same metrics, rather than embed
// half a megabyte of font.

// checkHTMLPath fails when the report could not be written to path, before
// a long run finds out: path must not be a directory, and either be a file
// open for writing or name one that can be created in its directory.
func checkHTMLPath(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return f.Close()
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".memkit-report-*")
	if err != nil {
		return fmt.Errorf("cannot create files in %s: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// writeHTMLFile writes the HTML report of a run of `memkit bench args...`
// to path.
func writeHTMLFile(path string, args []string, e env, results []result) error {
	var b bytes.Buffer
	if err := writeHTML(&b, commandLine(args), e, results); err != nil {
		return fmt.Errorf("bench: --html: %w", err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o666); err != nil {
		return fmt.Errorf("bench: --html: %w", err)
	}
	return nil
}

// commandLine is `memkit bench args...` as one would type it in a POSIX
// shell, quoting the args that need it.
func commandLine(args []string) string {
	var b strings.Builder
	b.WriteString("memkit bench")
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// htmlPage is what the page template renders.
type htmlPage struct {
	Command   string
	Env       env
	Benches   int
	Spread    bool    // --count > 1: the charts and tables show min–max
	LabelSize float64 // the charts' text size where it is not set, in points
	Workloads []htmlWorkload
}

// htmlWorkload is one workload's section: its charts and table.
type htmlWorkload struct {
	Name   string
	ID     string          // the section's anchor
	Charts []template.HTML // none when every figure is zero
	Rows   []htmlRow
}

// htmlRow is one impl's row in a workload's table: the text table's
// columns, each cell with its unit.
type htmlRow struct {
	Impl, Time, Spread, Bytes, Allocs, Ratio, Extra string
	Class                                           string // memkit, memkit-variant or other
}

// retainedMetric is the extra metric of the bytes a workload leaves
// retained (BurstIdle), charted in a panel of its own.
const retainedMetric = "retained-B"

// writeHTML writes the report page of results, measured on e with the
// command line cmd, to w.
func writeHTML(w io.Writer, cmd string, e env, results []result) error {
	page := htmlPage{Command: cmd, Env: e, Benches: len(results), LabelSize: labelSize.Points()}
	sums := summarize(results)
	index := map[string]int{} // workload name -> index in page.Workloads
	var charts []*chartData
	for i, r := range results {
		wl := r.bench.workload
		k, ok := index[wl]
		if !ok {
			k = len(page.Workloads)
			index[wl] = k
			page.Workloads = append(page.Workloads, htmlWorkload{Name: wl, ID: "w" + strconv.Itoa(k+1)})
			charts = append(charts, &chartData{name: wl})
		}
		s := sums[i]
		lo, hi := spread(r.runs)
		row := htmlRow{
			Impl: r.bench.impl, Time: formatTime(s.ns), Bytes: formatBytesCell(s.bytes), Allocs: formatAllocs(s.allocs),
			Ratio: formatRatioColumn(s.ratio), Extra: formatExtraCell(s.extra), Class: implClass(r.bench.impl),
		}
		if row.Ratio != "-" {
			row.Ratio += "×"
		}
		if len(r.runs) > 1 {
			page.Spread = true
			row.Spread = formatTimeRange(lo, hi)
		}
		page.Workloads[k].Rows = append(page.Workloads[k].Rows, row)
		c := charts[k]
		c.impls = append(c.impls, r.bench.impl)
		c.ns, c.lo, c.hi = append(c.ns, s.ns), append(c.lo, lo), append(c.hi, hi)
		c.allocs = append(c.allocs, s.allocs)
		if v, ok := s.extra[retainedMetric]; ok {
			c.retained = append(c.retained, make([]float64, len(c.impls)-1-len(c.retained))...)
			c.retained = append(c.retained, v)
		}
	}
	for k, c := range charts {
		if c.retained != nil {
			c.retained = append(c.retained, make([]float64, len(c.impls)-len(c.retained))...)
		}
		svgs, err := workloadCharts(c)
		if err != nil {
			return fmt.Errorf("chart of %s: %w", c.name, err)
		}
		page.Workloads[k].Charts = svgs
	}
	return pageTemplate.Execute(w, page)
}

// spread is the least and the greatest ns/op of runs.
func spread(runs []testing.BenchmarkResult) (lo, hi float64) {
	for i, r := range runs {
		v := float64(r.T.Nanoseconds()) / float64(r.N)
		if i == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return lo, hi
}

// formatTime prints ns/op with its unit, ns, µs, ms or s, with three or
// more significant digits: 27.9 ns, 2.63 µs, 62.2 ms.
func formatTime(ns float64) string {
	v, unit := timeUnit(ns)
	return formatNs(ns/v) + " " + unit
}

// formatTimeRange prints a min–max of ns/op in the unit of the max:
// 27.5–28.3 ns, 0.90–4.36 µs.
func formatTimeRange(lo, hi float64) string {
	v, unit := timeUnit(hi)
	return formatNs(lo/v) + "–" + formatNs(hi/v) + " " + unit
}

// timeUnit is the unit to print ns nanoseconds in, and its nanoseconds.
func timeUnit(ns float64) (float64, string) {
	switch {
	case ns >= 1e9:
		return 1e9, "s"
	case ns >= 1e6:
		return 1e6, "ms"
	case ns >= 1e3:
		return 1e3, "µs"
	}
	return 1, "ns"
}

// formatBytesCell prints B/op with its unit: 0 B, 0.24 B, 4 KiB, 512.8 MiB.
func formatBytesCell(v float64) string {
	if v < 1024 {
		return formatCount(v) + " B"
	}
	s := stats.FormatBytes(uint64(v))
	i := strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' })
	return s[:i] + " " + s[i:]
}

// formatAllocs prints allocs/op with its unit: 0 allocs, 1 alloc, 0.5 allocs.
func formatAllocs(v float64) string {
	s := formatCount(v)
	if s == "1" {
		return "1 alloc"
	}
	return s + " allocs"
}

// formatExtraCell prints extra metrics, sorted by name, each with its
// unit: a name ending in -B is a byte count ("retained: 40 KiB"), one
// ending in -% a percentage ("retained: 0.00763%"), and any other name is
// the unit of its value ("0 heap-fallbacks", "3.2 GB/s").
func formatExtraCell(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		num := strconv.FormatFloat(v, 'g', 3, 64)
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			num = strconv.FormatInt(int64(v), 10)
		}
		switch {
		case strings.HasSuffix(k, "-B") && v >= 0:
			parts = append(parts, strings.TrimSuffix(k, "-B")+": "+formatBytesCell(v))
		case strings.HasSuffix(k, "-%"):
			parts = append(parts, strings.TrimSuffix(k, "-%")+": "+num+"%")
		default:
			parts = append(parts, num+" "+k)
		}
	}
	return strings.Join(parts, ", ")
}

// memkitPackages are the impl names that are memkit's own packages, used
// bare where a workload compares them with memkit's main impl (bytepool in
// SlabAllocFree): they are colored as memkit's.
var memkitPackages = []string{"arena", "buddy", "buffer", "bytepool", "extent", "offheap", "ringbuf", "slab"}

// implClass sorts an impl into baseImpl, memkit's other configurations and
// packages (memkit-bounded, bytepool, ...), and the libraries memkit is
// compared with; the charts and tables color them apart.
func implClass(impl string) string {
	switch {
	case impl == baseImpl:
		return "memkit"
	case strings.HasPrefix(impl, baseImpl+"-") || slices.Contains(memkitPackages, impl):
		return "memkit-variant"
	}
	return "other"
}

// pageTemplate is the report. It is well-formed XML as well as HTML (void
// elements self-closed, no named entities but XML's), so tests can check
// it with encoding/xml.
var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>memkit bench report, {{.Env.Date}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; font-size: 16px; margin: 1.5em auto; max-width: 1180px; padding: 0 1em; color: #1f2328; }
h1 { font-size: 1.5em; margin-bottom: 0.3em; }
h2 { font-size: 1.2em; margin: 0 0 0.4em; }
code, pre { font-family: "Liberation Mono", Menlo, Consolas, monospace; font-size: 0.9em; }
pre { background: #f4f5f7; padding: 0.6em 0.8em; overflow-x: auto; }
nav ul { columns: 3; padding-left: 1.2em; }
section { margin: 2em 0; border-top: 1px solid #d8dbe0; padding-top: 1em; }
.charts { display: flex; flex-wrap: wrap; gap: 0.5em 2em; overflow-x: auto; }
svg.chart { flex: none; }
svg.chart text { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; font-size: {{.LabelSize}}px; }
table { border-collapse: collapse; margin-top: 0.6em; }
th, td { padding: 0.2em 0.8em; text-align: right; border-bottom: 1px solid #eceef1; white-space: nowrap; }
th:first-child, td:first-child, th:last-child, td.extra { text-align: left; }
td.extra { white-space: normal; }
tr.memkit td:first-child { font-weight: bold; color: #d94801; }
tr.memkit-variant td:first-child { color: #c95f12; }
.legend > span { white-space: nowrap; margin-right: 1.2em; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; vertical-align: -0.1em; margin-right: 0.35em; }
.swatch.memkit { background: #d94801; }
.swatch.memkit-variant { background: #fd8d3c; }
.swatch.other { background: #969ca6; }
</style>
</head>
<body>
<h1>memkit bench report</h1>
<p id="machine">goos: {{.Env.GOOS}} · goarch: {{.Env.GOARCH}} · cpu: {{.Env.CPU}} · go: {{.Env.Go}} · GOMAXPROCS: {{.Env.GOMAXPROCS}}</p>
<p id="run">date: {{.Env.Date}} · benchtime: {{.Env.Benchtime}} · count: {{.Env.Count}} · {{len .Workloads}} workloads, {{.Benches}} benchmarks</p>
<pre id="command">{{.Command}}</pre>
<p>Each workload's first chart shows, per implementation, its median time per operation (ns/op) over the runs divided by memkit's,
on a log scale: a bar up from the dashed line at 1× is slower than memkit, down from it faster{{if .Spread}}; the whisker spans
the fastest to the slowest run{{end}}. Then allocations per operation unless all are zero, and for burst workloads the memory
still retained after the burst. Lower is better. The table gives the figures; its ratio is ns/op divided by memkit's in the same workload.</p>
<p class="legend"><span><span class="swatch memkit"></span>memkit</span> <span><span class="swatch memkit-variant"></span>memkit's other configurations and packages</span> <span><span class="swatch other"></span>the libraries compared</span></p>
<nav><ul>
{{- range .Workloads}}
<li><a href="#{{.ID}}">{{.Name}}</a></li>
{{- end}}
</ul></nav>
{{- range .Workloads}}
<section id="{{.ID}}">
<h2>{{.Name}}</h2>
{{if .Charts}}<div class="charts">
{{- range .Charts}}
{{.}}
{{- end}}
</div>{{else}}<p class="nochart">No chart: every figure is zero.</p>{{end}}
<table>
<thead><tr><th>impl</th><th>time/op</th>{{if $.Spread}}<th>min–max</th>{{end}}<th>bytes/op</th><th>allocs/op</th><th>vs memkit</th><th>extra</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr class="{{.Class}}"><td>{{.Impl}}</td><td>{{.Time}}</td>{{if $.Spread}}<td>{{.Spread}}</td>{{end}}<td>{{.Bytes}}</td><td>{{.Allocs}}</td><td>{{.Ratio}}</td><td class="extra">{{.Extra}}</td></tr>
{{- end}}
</tbody>
</table>
</section>
{{- end}}
</body>
</html>
`))
