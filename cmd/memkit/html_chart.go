package main

import (
	"bytes"
	"errors"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/memkit/memkit"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// This file draws the charts of memkit bench --html: each workload gets
// one inline SVG, drawn with gonum.org/v1/plot, with up to three panels,
// an impl per bar: time as a ratio to memkit's on a log scale (with the
// min–max spread over the runs when --count > 1), allocs/op unless all
// are zero, and the memory retained after the burst where a workload
// reports it (BurstIdle).

// chartData is one workload's figures, an entry per impl.
type chartData struct {
	name       string
	impls      []string
	ns, lo, hi []float64 // median, min and max ns/op over the runs
	allocs     []float64
	retained   []float64 // retained-B, or nil when the workload reports none
	baseName   string    // the impl times are divided by
}

// The bar colors of each implClass; the page's CSS repeats them for the
// legend and the tables.
var implColors = map[string]color.RGBA{
	"memkit":         {0xd9, 0x48, 0x01, 0xff}, // #d94801
	"memkit-variant": {0xfd, 0x8d, 0x3c, 0xff}, // #fd8d3c
	"other":          {0x96, 0x9c, 0xa6, 0xff}, // #969ca6
}

// chartFont is the font of every text in the charts: plot measures it from
// its embedded copy; the page's CSS names it, with its metric twins.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Chart geometry, in points (vg.Length; 1/72 in, 4/3 of a CSS px).
const (
	titleHeight vg.Length = 26
	chartHeight vg.Length = 300
	panelGap    vg.Length = 28
	// panelMargin is roughly what a panel's axes and labels take of its
	// width, to size the bars.
	panelMargin vg.Length = 60
	// maxChartWidth is the page's width: a wider chart would be scaled
	// down, its text with it.
	maxChartWidth vg.Length = 885
)

// workloadChart draws one workload as an SVG element: the workload's name
// as title over its panels, or "" when every panel would be all zeros.
func workloadChart(c *chartData) (string, error) {
	n := len(c.impls)
	hasTime := slices.ContainsFunc(c.ns, func(v float64) bool { return v > 0 })
	hasAllocs := slices.ContainsFunc(c.allocs, func(v float64) bool { return formatCount(v) != "0" })
	hasRetained := slices.ContainsFunc(c.retained, func(v float64) bool { return v > 0 })
	count := 0
	for _, has := range []bool{hasTime, hasAllocs, hasRetained} {
		if has {
			count++
		}
	}
	if count == 0 {
		return "", nil
	}
	// A panel gives each bar 44 pt of width, within [240, 440] pt, and the
	// panels together fit the page's 885 pt (1180 CSS px).
	panelW := max(240, min(440, 44*vg.Length(n)+panelMargin, (maxChartWidth-vg.Length(count-1)*panelGap)/vg.Length(count)))
	perBar := (panelW - panelMargin) / vg.Length(n)
	barW := min(30, perBar*0.7)
	// Tick labels turn 35° when the longest would not fit its width.
	tick := textStyle(9)
	rotate := false
	for _, im := range c.impls {
		if tick.Width(im) > perBar-4 {
			rotate = true
		}
	}
	var panels []*plot.Plot
	if hasTime {
		p, err := ratioPanel(c, barW, rotate)
		if err != nil {
			return "", err
		}
		panels = append(panels, p)
	}
	if hasAllocs {
		p, err := barPanel("allocations (allocs/op)", c.impls, c.allocs, barW, rotate, formatCount, 1, compact)
		if err != nil {
			return "", err
		}
		panels = append(panels, p)
	}
	if hasRetained {
		b := func(v float64) string { return memkit.FormatBytes(uint64(max(v, 0))) }
		p, err := barPanel("retained after the burst (bytes)", c.impls, c.retained, barW, rotate, b, binaryUnit(slices.Max(c.retained)), b)
		if err != nil {
			return "", err
		}
		panels = append(panels, p)
	}

	w := vg.Length(len(panels))*panelW + vg.Length(len(panels)-1)*panelGap
	cv := vgsvg.New(w, chartHeight+titleHeight)
	dc := draw.New(cv)
	title := textStyle(14)
	title.XAlign, title.YAlign = draw.XCenter, draw.YTop
	dc.FillText(title, vg.Point{X: w / 2, Y: chartHeight + titleHeight - 6}, c.name)
	body := draw.Crop(dc, 0, 0, 0, -titleHeight)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: panelGap, PadTop: 2, PadBottom: 4, PadLeft: 4, PadRight: 4}
	cs := plot.Align([][]*plot.Plot{panels}, tiles, body)
	for i, p := range panels {
		p.Draw(cs[0][i])
	}

	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
		return "", err
	}
	// Inline, the element starts at <svg: drop the XML declaration and
	// comment before it, and label it for screen readers.
	svg := b.String()
	i := strings.Index(svg, "<svg")
	if i < 0 {
		return "", errors.New("vgsvg wrote no <svg> element")
	}
	label := template.HTMLEscapeString(c.name + ": time relative to " + c.baseLabel() + ", and allocations, per implementation")
	return `<svg class="chart" role="img" aria-label="` + label + `"` + strings.TrimPrefix(svg[i:], "<svg"), nil
}

// baseLabel names what the workload's times are divided by.
func (c *chartData) baseLabel() string {
	if c.baseName == baseImpl {
		return baseImpl
	}
	return "the fastest"
}

// ratioPanel is the time panel: each impl's median ns/op divided by
// memkit's (by the fastest impl's when memkit did not run), as a bar from
// 1 on a log scale, so that a pool 50 times faster than make is not a
// one-pixel sliver beside it; with its min–max over the runs as a
// whisker. Some time must be non-zero.
func ratioPanel(c *chartData, barW vg.Length, rotate bool) (*plot.Plot, error) {
	base := 0.0
	for i, im := range c.impls {
		if im == baseImpl && c.ns[i] > 0 {
			base, c.baseName = c.ns[i], baseImpl
		}
	}
	if base == 0 {
		for i, v := range c.ns {
			if v > 0 && (base == 0 || v < base) {
				base, c.baseName = v, c.impls[i]
			}
		}
	}
	r := &ratioBars{width: barW}
	for i, im := range c.impls {
		r.vals = append(r.vals, c.ns[i]/base)
		r.lo = append(r.lo, c.lo[i]/base)
		r.hi = append(r.hi, c.hi[i]/base)
		r.colors = append(r.colors, implColors[implClass(im)])
	}
	p := newPanel("time relative to " + c.baseLabel() + " (log scale)")
	p.Add(r)
	p.Y.Scale = plot.LogScale{}
	p.Y.Min, p.Y.Max = r.yRange()
	p.Y.Tick.Marker = plot.TickerFunc(ratioTicks)
	labels := plotter.XYLabels{XYs: make(plotter.XYs, len(r.vals)), Labels: make([]string, len(r.vals))}
	for i, v := range r.vals {
		labels.XYs[i] = plotter.XY{X: float64(i), Y: max(v, r.hi[i], 1)}
		labels.Labels[i] = formatRatio(v)
	}
	vl, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	styleValueLabels(vl)
	// A bar down from 1 (faster than the base) is labeled under its end.
	for i, v := range r.vals {
		if v < 1 && v > 0 && formatRatio(v) != "1×" {
			vl.XYs[i].Y = min(v, r.lo[i])
			vl.TextStyle[i].YAlign = draw.YTop
		}
	}
	p.Add(vl)
	nominal(p, c.impls, rotate)
	return p, nil
}

// ratioBars draws bars from 1 to each value on the panel's (log) Y axis,
// a reference line at 1, and whiskers from lo to hi where they differ.
type ratioBars struct {
	vals, lo, hi []float64
	colors       []color.Color
	width        vg.Length
}

func (r *ratioBars) yRange() (lo, hi float64) {
	lo, hi = 1, 1
	for i, v := range r.vals {
		if v > 0 {
			lo, hi = min(lo, v, r.lo[i]), max(hi, v, r.hi[i])
		}
	}
	// Room below for the axis and above for the value labels.
	return lo / 1.5, hi * 1.8
}

// DataRange implements plot.DataRanger.
func (r *ratioBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = r.yRange()
	return -0.5, float64(len(r.vals)) - 0.5, ymin, ymax
}

// Plot implements plot.Plotter.
func (r *ratioBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	one := trY(1)
	ref := draw.LineStyle{Color: color.Gray{0x70}, Width: vg.Points(0.75), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
	c.StrokeLine2(ref, c.Min.X, one, c.Max.X, one)
	whisker := draw.LineStyle{Color: color.Gray{0x30}, Width: vg.Points(1)}
	for i, v := range r.vals {
		if v <= 0 {
			continue
		}
		x := trX(float64(i))
		y0, y1 := min(one, trY(v)), max(one, trY(v))
		if y1-y0 < 3 { // about 1: a band on the reference line, to show the color
			y0, y1 = one-1.5, one+1.5
		}
		half := r.width / 2
		c.FillPolygon(r.colors[i], c.ClipPolygonY([]vg.Point{{X: x - half, Y: y0}, {X: x + half, Y: y0}, {X: x + half, Y: y1}, {X: x - half, Y: y1}}))
		if r.hi[i] > r.lo[i]*1.0001 {
			lo, hi := trY(r.lo[i]), trY(r.hi[i])
			c.StrokeLine2(whisker, x, lo, x, hi)
			c.StrokeLine2(whisker, x-half/2, lo, x+half/2, lo)
			c.StrokeLine2(whisker, x-half/2, hi, x+half/2, hi)
		}
	}
}

// formatRatio prints a ratio to memkit with two or three significant
// digits: 0.52×, 1×, 3.4×, 120×, 45k×; below 0.001, as 1/N×.
func formatRatio(v float64) string {
	switch {
	case v <= 0:
		return "0"
	case v < 0.001:
		return "1/" + compact(math.Round(1/v)) + "×"
	case v >= 1000:
		return compact(float64(int64(v/math.Pow(10, math.Floor(math.Log10(v))-1)))*math.Pow(10, math.Floor(math.Log10(v))-1)) + "×"
	case v >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + "×"
	}
	return strconv.FormatFloat(v, 'g', 2, 64) + "×"
}

// ratioTicks labels a log ratio axis at 1, 2 and 5 times powers of ten
// over up to three decades, and beyond at every k-th power of ten alone,
// at most eight of them.
func ratioTicks(lo, hi float64) []plot.Tick {
	first, last := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	mults, step := []float64{1, 2, 5}, 1.0
	if last-first > 3 {
		mults, step = []float64{1}, math.Ceil((last-first+1)/8)
	}
	var ticks []plot.Tick
	for e := first; e <= last; e += step {
		for _, m := range mults {
			if v := m * math.Pow(10, e); v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: formatRatio(v)})
			}
		}
	}
	return ticks
}

// textStyle is plot's text style in chartFont at size points.
func textStyle(size vg.Length) text.Style {
	return text.Style{
		Color:   color.Black,
		Font:    font.From(chartFont, size),
		Handler: plot.DefaultTextHandler,
	}
}

// newPanel is an empty panel titled title, in chartFont, with a light
// horizontal grid.
func newPanel(title string) *plot.Plot {
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
	return p
}

// nominal names the panel's bars after impls, turning the names when they
// would not fit.
func nominal(p *plot.Plot, impls []string, rotate bool) {
	p.NominalX(impls...)
	p.Y.Padding = 0
	p.X.Min, p.X.Max = -0.5, float64(len(impls))-0.5
	if rotate {
		p.X.Tick.Label.Rotation = 35 * math.Pi / 180
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
}

// styleValueLabels sets the font and placement of the labels over bars.
func styleValueLabels(vl *plotter.Labels) {
	for i := range vl.TextStyle {
		vl.TextStyle[i].Font = font.From(chartFont, 8)
		vl.TextStyle[i].XAlign = draw.XCenter
		vl.TextStyle[i].YAlign = draw.YBottom
	}
	vl.Offset = vg.Point{Y: 0}
}

// binaryUnit is the power of 1024 at or below v (at least 1), so that byte
// ticks fall on round binary values: 16MiB, 32MiB, not 23.8MiB.
func binaryUnit(v float64) float64 {
	u := 1.0
	for u*1024 <= v {
		u *= 1024
	}
	return u
}

// barPanel is a linear panel: a bar per impl of height vals[i] from 0,
// labeled by label, in the color of the impl's implClass, with Y ticks at
// round multiples of unit, labeled by tick.
func barPanel(title string, impls []string, vals []float64, barW vg.Length, rotate bool, label func(float64) string, unit float64, tick func(float64) string) (*plot.Plot, error) {
	p := newPanel(title)
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
		labels.Labels[i] = label(v)
		top = max(top, v)
	}
	vl, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	styleValueLabels(vl)
	p.Add(vl)
	nominal(p, impls, rotate)
	p.Y.Min = 0
	p.Y.Max = top * 1.12 // room for the value labels
	p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		ticks := plot.DefaultTicks{}.Ticks(lo/unit, hi/unit)
		for i := range ticks {
			ticks[i].Value *= unit
			if ticks[i].Label != "" {
				ticks[i].Label = tick(ticks[i].Value)
			}
		}
		return ticks
	})
	return p, nil
}

// compact labels a tick without exponents: 2000 as 2k, 1500000 as 1.5M.
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
