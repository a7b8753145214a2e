package main

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// This file is memkit bench --html: a report page that needs nothing but
// itself to be viewed, small enough to attach to an issue. Each workload
// gets a section with its chart (html_chart.go) and a table of its
// figures; the page also holds the machine description and the command
// line. Plot measures text in Liberation Sans; the page asks for it and
// falls back to Arial or Helvetica, which have the same metrics, rather
// than embed half a megabyte of font.

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
	Spread    bool // --count > 1: the charts and tables show min–max
	Workloads []htmlWorkload
}

// htmlWorkload is one workload's section: its chart and table.
type htmlWorkload struct {
	Name  string
	ID    string        // the section's anchor
	Chart template.HTML // empty when every figure is zero
	Rows  []htmlRow
}

// htmlRow is one impl's row in a workload's table: the text table's
// columns, formatted alike.
type htmlRow struct {
	Impl, Ns, Spread, Bytes, Allocs, Ratio, Extra string
	Class                                         string // memkit, memkit-variant or other
}

// retainedMetric is the extra metric of the bytes a workload leaves
// retained (BurstIdle), charted in a panel of its own.
const retainedMetric = "retained-B"

// writeHTML writes the report page of results, measured on e with the
// command line cmd, to w.
func writeHTML(w io.Writer, cmd string, e env, results []result) error {
	page := htmlPage{Command: cmd, Env: e, Benches: len(results)}
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
			Impl: r.bench.impl, Ns: formatNs(s.ns), Bytes: formatCount(s.bytes), Allocs: formatCount(s.allocs),
			Ratio: formatRatioColumn(s.ratio), Extra: formatExtra(s.extra), Class: implClass(r.bench.impl),
		}
		if len(r.runs) > 1 {
			page.Spread = true
			row.Spread = formatNs(lo) + "–" + formatNs(hi)
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
		svg, err := workloadChart(c)
		if err != nil {
			return fmt.Errorf("chart of %s: %w", c.name, err)
		}
		page.Workloads[k].Chart = template.HTML(svg)
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
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 1.5em auto; max-width: 1180px; padding: 0 1em; color: #1f2328; }
h1 { font-size: 1.5em; margin-bottom: 0.3em; }
code, pre { font-family: "Liberation Mono", Menlo, Consolas, monospace; font-size: 0.9em; }
pre { background: #f4f5f7; padding: 0.6em 0.8em; overflow-x: auto; }
#machine { font-size: 0.95em; }
nav ul { columns: 3; font-size: 0.9em; padding-left: 1.2em; }
section { margin: 2em 0; border-top: 1px solid #d8dbe0; padding-top: 1em; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg.chart text { font-family: "Liberation Sans", Arial, Helvetica, sans-serif !important; }
table { border-collapse: collapse; font-size: 0.9em; margin-top: 0.6em; }
th, td { padding: 0.2em 0.8em; text-align: right; border-bottom: 1px solid #eceef1; }
th:first-child, td:first-child, td.extra { text-align: left; }
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
<p>Each chart shows, per implementation, its median ns/op over the runs divided by memkit's, on a log scale
(a bar up from the dashed line at 1× is slower than memkit, down from it faster){{if .Spread}}, with a whisker from the fastest
to the slowest run{{end}}; then allocs/op unless all are zero, and for burst workloads the memory still retained after the burst.
Lower is better. The ratio column is ns/op divided by memkit's in the same workload.</p>
<p class="legend"><span><span class="swatch memkit"></span>memkit</span> <span><span class="swatch memkit-variant"></span>memkit's other configurations and packages</span> <span><span class="swatch other"></span>the libraries compared</span></p>
<nav><ul>
{{- range .Workloads}}
<li><a href="#{{.ID}}">{{.Name}}</a></li>
{{- end}}
</ul></nav>
{{- range .Workloads}}
<section id="{{.ID}}">
{{if .Chart}}{{.Chart}}{{else}}<h2>{{.Name}}</h2>
<p class="nochart">No chart: every figure is zero.</p>{{end}}
<table>
<thead><tr><th>impl</th><th>ns/op</th>{{if $.Spread}}<th>min–max</th>{{end}}<th>B/op</th><th>allocs/op</th><th>ratio</th><th>extra</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr class="{{.Class}}"><td>{{.Impl}}</td><td>{{.Ns}}</td>{{if $.Spread}}<td>{{.Spread}}</td>{{end}}<td>{{.Bytes}}</td><td>{{.Allocs}}</td><td>{{.Ratio}}</td><td class="extra">{{.Extra}}</td></tr>
{{- end}}
</tbody>
</table>
</section>
{{- end}}
</body>
</html>
`))
