package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/image/font/sfnt"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// This file is memkit bench --html: a report page that needs nothing but
// itself to be viewed. Each workload gets one inline SVG, drawn with
// gonum.org/v1/plot, with two bar panels (ns/op and allocs/op, an impl per
// bar); the page also holds the machine description, the command line and
// the numbers as tables. The one font the charts and the page use,
// Liberation Sans (which plot measures text with, from its embedded copy),
// is embedded once as a data: URL, so that the page looks the same on a
// machine without it and without a network.

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
	FontFace  template.CSS // the @font-face rule of the embedded font
	Workloads []htmlWorkload
}

// htmlWorkload is one workload's section: its chart and table.
type htmlWorkload struct {
	Name  string
	ID    string // the section's anchor
	Chart template.HTML
	Rows  []htmlRow
}

// htmlRow is one impl's row in a workload's table: the text table's
// columns, formatted alike.
type htmlRow struct {
	Impl, Ns, Bytes, Allocs, Ratio, Extra string
	Class                                 string // memkit, memkit-variant or other
}

// writeHTML writes the report page of results, measured on e with the
// command line cmd, to w.
func writeHTML(w io.Writer, cmd string, e env, results []result) error {
	ff, err := fontFace()
	if err != nil {
		return err
	}
	page := htmlPage{Command: cmd, Env: e, Benches: len(results), FontFace: ff}
	sums := summarize(results)
	index := map[string]int{} // workload name -> index in page.Workloads
	var ns, allocs [][]float64
	var impls [][]string
	for i, r := range results {
		wl := r.bench.workload
		k, ok := index[wl]
		if !ok {
			k = len(page.Workloads)
			index[wl] = k
			page.Workloads = append(page.Workloads, htmlWorkload{Name: wl, ID: "w" + strconv.Itoa(k+1)})
			ns, allocs, impls = append(ns, nil), append(allocs, nil), append(impls, nil)
		}
		s := sums[i]
		ratio := "-"
		if s.ratio > 0 {
			ratio = strconv.FormatFloat(s.ratio, 'f', 2, 64)
		}
		page.Workloads[k].Rows = append(page.Workloads[k].Rows, htmlRow{
			Impl: r.bench.impl, Ns: formatNs(s.ns), Bytes: formatCount(s.bytes), Allocs: formatCount(s.allocs),
			Ratio: ratio, Extra: formatExtra(s.extra), Class: implClass(r.bench.impl),
		})
		ns[k] = append(ns[k], s.ns)
		allocs[k] = append(allocs[k], s.allocs)
		impls[k] = append(impls[k], r.bench.impl)
	}
	for k := range page.Workloads {
		svg, err := workloadChart(page.Workloads[k].Name, impls[k], ns[k], allocs[k])
		if err != nil {
			return fmt.Errorf("chart of %s: %w", page.Workloads[k].Name, err)
		}
		page.Workloads[k].Chart = template.HTML(svg)
	}
	return pageTemplate.Execute(w, page)
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

// implClass sorts an impl into baseImpl, the other memkit variants
// (memkit-bounded, ...), and the libraries memkit is compared with; the
// charts and tables color them apart.
func implClass(impl string) string {
	switch {
	case impl == baseImpl:
		return "memkit"
	case strings.HasPrefix(impl, baseImpl+"-"):
		return "memkit-variant"
	}
	return "other"
}

// The bar colors of each implClass; the page's CSS repeats them for the
// legend and the tables.
var implColors = map[string]color.RGBA{
	"memkit":         {0xd9, 0x48, 0x01, 0xff}, // #d94801
	"memkit-variant": {0xfd, 0x8d, 0x3c, 0xff}, // #fd8d3c
	"other":          {0x96, 0x9c, 0xa6, 0xff}, // #969ca6
}

// chartFont is the font of every text in the charts: plot measures it from
// its embedded copy, and the page embeds the same file for the browser.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// fontFace returns the page's @font-face rule for chartFont, with the font
// file inline as a data: URL, under the family name the SVG text uses.
var fontFace = sync.OnceValues(func() (template.CSS, error) {
	face := font.DefaultCache.Lookup(chartFont, 10)
	if face.Face == nil {
		return "", errors.New("plot has no font " + chartFont.Name())
	}
	var raw bytes.Buffer
	if _, err := face.Face.WriteSourceTo(nil, &raw); err != nil {
		return "", err
	}
	// The family as vgsvg writes it into each <text>: the font's own name.
	name, err := face.Face.Name(nil, sfnt.NameIDFamily)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(name, `"\<>&;{}`) {
		return "", fmt.Errorf("font family %q", name)
	}
	return template.CSS(fmt.Sprintf(`@font-face{font-family:"%s";font-style:normal;font-weight:normal;src:url(data:font/ttf;base64,%s) format("truetype")}`,
		name, base64.StdEncoding.EncodeToString(raw.Bytes()))), nil
})

// Chart geometry, in points (vg.Length; 1/72 in, 4/3 of a CSS px).
const (
	titleHeight vg.Length = 26
	chartHeight vg.Length = 300
	panelGap    vg.Length = 28
	// panelMargin is roughly what a panel's axes and labels take of its
	// width, to size the bars.
	panelMargin vg.Length = 60
)

// workloadChart draws one workload as an SVG element: the workload's name
// as title over two bar panels, ns/op and allocs/op, an impl per bar.
func workloadChart(name string, impls []string, ns, allocs []float64) (string, error) {
	n := len(impls)
	// A panel gives each bar a 44 pt slot, within [240, 440] pt.
	panelW := max(240, min(440, 44*vg.Length(n)+panelMargin))
	slot := (panelW - panelMargin) / vg.Length(n)
	barW := min(30, slot*0.7)
	// Tick labels turn 35° when the longest would not fit its slot.
	tick := textStyle(9)
	rotate := false
	for _, im := range impls {
		if tick.Width(im) > slot-4 {
			rotate = true
		}
	}
	pns, err := barPanel("time (ns/op)", impls, ns, barW, rotate)
	if err != nil {
		return "", err
	}
	pal, err := barPanel("allocations (allocs/op)", impls, allocs, barW, rotate)
	if err != nil {
		return "", err
	}

	w := 2*panelW + panelGap
	c := vgsvg.New(w, chartHeight+titleHeight)
	dc := draw.New(c)
	title := textStyle(14)
	title.XAlign, title.YAlign = draw.XCenter, draw.YTop
	dc.FillText(title, vg.Point{X: w / 2, Y: chartHeight + titleHeight - 6}, name)
	body := draw.Crop(dc, 0, 0, 0, -titleHeight)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: panelGap, PadTop: 2, PadBottom: 4, PadLeft: 4, PadRight: 4}
	cs := plot.Align([][]*plot.Plot{{pns, pal}}, tiles, body)
	pns.Draw(cs[0][0])
	pal.Draw(cs[0][1])

	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	// Inline, the element starts at <svg: drop the XML declaration and
	// comment before it, and label it for screen readers.
	svg := b.String()
	i := strings.Index(svg, "<svg")
	if i < 0 {
		return "", errors.New("vgsvg wrote no <svg> element")
	}
	label := template.HTMLEscapeString(name + ": ns/op and allocs/op per implementation")
	return `<svg class="chart" role="img" aria-label="` + label + `"` + strings.TrimPrefix(svg[i:], "<svg"), nil
}

// textStyle is plot's text style in chartFont at size points.
func textStyle(size vg.Length) text.Style {
	return text.Style{
		Color:   color.Black,
		Font:    font.From(chartFont, size),
		Handler: plot.DefaultTextHandler,
	}
}

// barPanel is one panel of a workload's chart: a bar per impl of height
// vals[i], labeled with its value, in the color of the impl's implClass.
func barPanel(title string, impls []string, vals []float64, barW vg.Length, rotate bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(chartFont, 11)
	p.Title.Padding = 6
	p.Y.Tick.Label.Font = font.From(chartFont, 9)
	p.X.Tick.Label.Font = font.From(chartFont, 9)
	p.Y.Label.TextStyle.Font = font.From(chartFont, 10)
	p.X.Label.TextStyle.Font = font.From(chartFont, 10)
	grid := plotter.NewGrid() // first, to lie under the bars
	grid.Vertical.Width = 0
	grid.Horizontal.Color = color.Gray{0xe0}
	p.Add(grid)

	top := 0.0
	labels := plotter.XYLabels{XYs: make(plotter.XYs, len(vals)), Labels: make([]string, len(vals))}
	for i, v := range vals {
		bar, err := plotter.NewBarChart(plotter.Values{v}, barW)
		if err != nil {
			return nil, err
		}
		bar.XMin = float64(i)
		bar.Color = implColors[implClass(impls[i])]
		bar.LineStyle.Width = 0
		p.Add(bar)
		labels.XYs[i] = plotter.XY{X: float64(i), Y: v}
		labels.Labels[i] = formatCount(v)
		top = max(top, v)
	}
	vl, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range vl.TextStyle {
		vl.TextStyle[i].Font = font.From(chartFont, 8)
		vl.TextStyle[i].XAlign = draw.XCenter
		vl.TextStyle[i].YAlign = draw.YBottom
	}
	vl.Offset = vg.Point{Y: 2}
	p.Add(vl)

	p.NominalX(impls...)
	p.Y.Padding = 0
	p.X.Min, p.X.Max = -0.5, float64(len(impls))-0.5
	if rotate {
		p.X.Tick.Label.Rotation = 35 * math.Pi / 180
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	p.Y.Min = 0
	if top < 0.005 {
		p.Y.Max = 1 // all zero, as formatCount prints them: bars flat on the axis
	} else {
		p.Y.Max = top * 1.12 // room for the value labels
	}
	p.Y.Tick.Marker = plot.TickerFunc(compactTicks)
	return p, nil
}

// compactTicks are plot's default ticks labeled without exponents:
// 2000 as 2k, 1500000 as 1.5M.
func compactTicks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = compact(ticks[i].Value)
		}
	}
	return ticks
}

func compact(v float64) string {
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.div {
			return strconv.FormatFloat(v/u.div, 'g', 4, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
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
{{.FontFace}}
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 1.5em auto; max-width: 1180px; padding: 0 1em; color: #1f2328; }
h1 { font-size: 1.5em; margin-bottom: 0.3em; }
code, pre { font-family: "Liberation Mono", Menlo, Consolas, monospace; font-size: 0.9em; }
pre { background: #f4f5f7; padding: 0.6em 0.8em; overflow-x: auto; }
#machine { font-size: 0.95em; }
nav ul { columns: 3; font-size: 0.9em; padding-left: 1.2em; }
section { margin: 2em 0; border-top: 1px solid #d8dbe0; padding-top: 1em; }
svg.chart { display: block; max-width: 100%; height: auto; }
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
<p>Each chart shows, per implementation, the median over the runs of ns/op and of allocs/op; lower is better.
The ratio column is ns/op divided by memkit's in the same workload.</p>
<p class="legend"><span><span class="swatch memkit"></span>memkit</span> <span><span class="swatch memkit-variant"></span>other memkit configurations</span> <span><span class="swatch other"></span>the libraries compared</span></p>
<nav><ul>
{{- range .Workloads}}
<li><a href="#{{.ID}}">{{.Name}}</a></li>
{{- end}}
</ul></nav>
{{- range .Workloads}}
<section id="{{.ID}}">
{{.Chart}}
<table>
<thead><tr><th>impl</th><th>ns/op</th><th>B/op</th><th>allocs/op</th><th>ratio</th><th>extra</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr class="{{.Class}}"><td>{{.Impl}}</td><td>{{.Ns}}</td><td>{{.Bytes}}</td><td>{{.Allocs}}</td><td>{{.Ratio}}</td><td class="extra">{{.Extra}}</td></tr>
{{- end}}
</tbody>
</table>
</section>
{{- end}}
</body>
</html>
`))
