package main

import (
	"bytes"
	"errors"
	"html/template"
	"image/color"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/memkit/memkit/stats"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// This file draws the charts of memkit bench --html: each workload gets up
// to three panels, each an inline SVG drawn with gonum.org/v1/plot, an
// impl per bar: time as a ratio to memkit's on a log scale (with the
// min–max spread over the runs when --count > 1), allocs/op unless all
// are zero, and the memory retained after the burst where a workload
// reports it (BurstIdle).
//
// The panels are laid out by the page (a wrapping row), never scaled: a
// panel is drawn in points, 4/3 of a CSS pixel, so its text is
// font-size×4/3 px at 100% zoom, and no text is smaller than minTextPx.

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

// pxPerPt is the CSS pixels of a point, the unit of the charts' geometry.
const pxPerPt = 4.0 / 3

// minTextPx is the smallest text in the charts, in CSS pixels at 100%
// zoom: the size of the tick and value labels.
const minTextPx = 12

// Chart text sizes, in points.
const (
	labelSize     vg.Length = minTextPx / pxPerPt // tick and value labels: 9pt, 12px
	axisLabelSize vg.Length = 10                  // 13.3px
	panelTitle    vg.Length = 11                  // 14.7px
)

// Chart geometry, in points.
const (
	chartHeight vg.Length = 290
	// perBar is the width a bar takes with the gap to the next, wide
	// enough for a value label such as "1/2.5k×" or "24.6k".
	perBar vg.Length = 34
	barW   vg.Length = 22
	// panelMargin is roughly what a panel's axes and labels take of its
	// width.
	panelMargin vg.Length = 72
	// labelGap is the space between a bar's or whisker's end and its
	// value label.
	labelGap vg.Length = 3
)

// labelFace is the font of the value labels, as plot measures it.
var labelFace = font.DefaultCache.Lookup(font.From(chartFont, labelSize), labelSize)

// workloadCharts draws one workload's panels, each an <svg> element, or
// none when every panel would be all zeros.
func workloadCharts(c *chartData) ([]template.HTML, error) {
	panels, rotate := workloadPanels(c)
	var out []template.HTML
	for _, p := range panels {
		svg, err := p.svg(c, rotate)
		if err != nil {
			return nil, err
		}
		label := template.HTMLEscapeString(c.name + ": " + p.label)
		out = append(out, template.HTML(`<svg class="chart" role="img" aria-label="`+label+`"`+compactSVG(svg, chartHeight)))
	}
	return out, nil
}

// workloadPanels is the panels of c that have a non-zero figure, and
// whether their impl names turn 35°, which they do when the longest would
// not fit under its bar.
func workloadPanels(c *chartData) (panels []*panel, rotate bool) {
	if slices.ContainsFunc(c.ns, func(v float64) bool { return v > 0 }) {
		panels = append(panels, ratioPanel(c))
	}
	if slices.ContainsFunc(c.allocs, func(v float64) bool { return formatCount(v) != "0" }) {
		count := func(v float64) string {
			if v >= 1000 {
				return compact(v)
			}
			return formatCount(v)
		}
		panels = append(panels, barPanel("allocations", "allocs/op", c.impls, c.allocs, count, 1, compact))
	}
	if slices.ContainsFunc(c.retained, func(v float64) bool { return v > 0 }) {
		b := func(v float64) string { return stats.FormatBytes(uint64(max(v, 0))) }
		panels = append(panels, barPanel("retained after the burst", "bytes", c.impls, c.retained, b, binaryUnit(slices.Max(c.retained)), b))
	}
	rotate = slices.ContainsFunc(c.impls, func(im string) bool { return textStyle(labelSize).Width(im) > perBar-4 })
	return panels, rotate
}

// panel is one chart: a plot whose bars leave room for their labels.
type panel struct {
	*plot.Plot
	bars  *bars
	label string // what the panel shows, for screen readers
}

// svg draws p as a panel of c's workload: the <svg> element as vgsvg
// writes it, but for its first 4 bytes, "<svg".
func (p *panel) svg(c *chartData, rotate bool) (string, error) {
	n := len(c.impls)
	p.NominalX(c.impls...)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	if rotate {
		p.X.Tick.Label.Rotation = 35 * math.Pi / 180
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YTop
	}
	w := max(240, panelMargin+perBar*vg.Length(n))
	cv := vgsvg.New(w, chartHeight)
	dc := draw.Crop(draw.New(cv), 4, -4, 4, -4)
	// The data area's height does not depend on the Y range (the X axis
	// and the title take the same height whatever it is): fit the range to
	// it so that the labels past the bars' ends stay inside.
	p.Y.Min, p.Y.Max = p.bars.dataRange()
	da := p.DataCanvas(dc)
	p.Y.Min, p.Y.Max = p.bars.fit(da.Max.Y - da.Min.Y)
	p.Draw(dc)

	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
		return "", err
	}
	// Inline, the element starts at <svg: drop the XML declaration and
	// comment before it.
	svg := b.String()
	i := strings.Index(svg, "<svg")
	if i < 0 {
		return "", errors.New("vgsvg wrote no <svg> element")
	}
	return svg[i+len("<svg"):], nil
}

// Rewrites of vgsvg's output that do not change the picture.
var (
	svgFontDescr  = regexp.MustCompile(`\n\tstyle="font-family:[^;"]*;font-variant:normal;font-weight:normal;font-style:normal;`)
	svgXLink      = regexp.MustCompile(`\n\txmlns:xlink="[^"]*"`)
	svgBackground = regexp.MustCompile(`<path d="[^"]*" style="fill:#FFFFFF" />\n`)
	svgRotated    = regexp.MustCompile(`<g transform="rotate\(([^)]*)\)">\n(<text [^>]*) transform="scale\(1, -1\)"([^>]*>[^<]*</text>\n)</g>\n`)
	svgTextLine   = regexp.MustCompile(`^<text x="([^"]*)" y="([^"]*)" transform="(?:rotate\(([^)]*)\) )?scale\(1, -1\)"(.*)$`)
	svgPath       = regexp.MustCompile(`^<path d="([^"]*)" (style="[^"]*") />$`)
	svgPathCmd    = regexp.MustCompile(`([MLZ])([^MLZ]*)`)
	svgFraction   = regexp.MustCompile(`-?[0-9]+\.[0-9]+`)
	svgCoords     = regexp.MustCompile(` (?:x|y|d)="[^"]*"`)
)

// compactSVG is svg, as vgsvg writes it, in fewer bytes: without the
// font's family and variant on every text (the page's CSS sets the
// family, and the size of the value and tick labels), the XLink namespace
// nothing uses and the white background; with a rotated text's group
// folded into its transform, runs of paths of one style merged into one
// path, lines along an axis as H and V, and coordinates rounded to a
// tenth of a point.
func compactSVG(svg string, h vg.Length) string {
	svg = svgFontDescr.ReplaceAllLiteralString(svg, ` style="`)
	svg = strings.ReplaceAll(svg, ` style="font-size:`+strconv.FormatFloat(labelSize.Points(), 'g', -1, 64)+`px"`, "")
	svg = svgXLink.ReplaceAllLiteralString(svg, "")
	svg = svgBackground.ReplaceAllLiteralString(svg, "")
	svg = svgRotated.ReplaceAllString(svg, `$2 transform="rotate($1) scale(1, -1)"$3`)
	svg = svgCoords.ReplaceAllStringFunc(svg, func(attr string) string {
		return svgFraction.ReplaceAllStringFunc(attr, func(num string) string {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return num
			}
			s := strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
			if s == "-0" {
				return "0"
			}
			return s
		})
	})
	lines := strings.Split(svg, "\n")
	out := lines[:0]
	var texts []string
	lastStyle := ""
	depth := 0 // of <g> elements: 1 in the flipped group alone
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "<g "):
			depth++
		case l == "</g>":
			depth--
		}
		if t, ok := unflipText(l, h); ok && depth == 1 {
			texts = append(texts, t)
			continue
		}
		if l == "</svg>" { // the texts over the shapes, out of the flipped group
			out = append(out, texts...)
		}
		m := svgPath.FindStringSubmatch(l)
		if m == nil {
			out, lastStyle = append(out, l), ""
			continue
		}
		d := axisLines(m[1])
		if m[2] == lastStyle {
			prev := out[len(out)-1]
			out[len(out)-1] = prev[:len(prev)-len(`" `+m[2]+` />`)] + d + `" ` + m[2] + ` />`
			continue
		}
		out, lastStyle = append(out, `<path d="`+d+`" `+m[2]+` />`), m[2]
	}
	return strings.Join(out, "\n")
}

// unflipText rewrites a <text> line of vgsvg's, drawn in a group that
// flips the canvas h points high upside down and flipped back on its own,
// into one drawn outside the group: (x, y) flipped back is (x, y+h), and
// a text rotated by a in the flipped group is rotated by -a.
func unflipText(l string, h vg.Length) (string, bool) {
	m := svgTextLine.FindStringSubmatch(l)
	if m == nil {
		return "", false
	}
	x, errX := strconv.ParseFloat(m[1], 64)
	y, errY := strconv.ParseFloat(m[2], 64)
	if errX != nil || errY != nil {
		return "", false
	}
	num := func(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }
	if m[3] == "" {
		return `<text x="` + m[1] + `" y="` + num(y+h.Points()) + `"` + m[4], true
	}
	a, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return "", false
	}
	// (x, y) rotated by -a, then moved down by h; the text turns about it.
	sin, cos := math.Sincos(-a * math.Pi / 180)
	ax, ay := num(x*cos-y*sin), num(x*sin+y*cos+h.Points())
	return `<text x="` + ax + `" y="` + ay + `" transform="rotate(` + num(-a) + ` ` + ax + ` ` + ay + `)"` + m[4], true
}

// axisLines rewrites a path's lines along an axis from L x,y to H x or
// V y.
func axisLines(d string) string {
	var b strings.Builder
	x, y := "", ""
	for _, c := range svgPathCmd.FindAllStringSubmatch(d, -1) {
		nx, ny, ok := strings.Cut(c[2], ",")
		switch {
		case c[1] == "L" && ok && ny == y:
			b.WriteString("H" + nx)
		case c[1] == "L" && ok && nx == x:
			b.WriteString("V" + ny)
		default:
			b.WriteString(c[0])
		}
		if ok {
			x, y = nx, ny
		}
	}
	return b.String()
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
func ratioPanel(c *chartData) *panel {
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
	r := &bars{base: 1, log: true}
	for i, im := range c.impls {
		v := c.ns[i] / base
		r.vals = append(r.vals, v)
		r.lo = append(r.lo, c.lo[i]/base)
		r.hi = append(r.hi, c.hi[i]/base)
		r.labels = append(r.labels, formatRatio(v))
		r.colors = append(r.colors, implColors[implClass(im)])
	}
	p := newPanel("time per op, relative to "+c.baseLabel(), "× "+c.baseLabel()+"'s ns/op (log scale)", r)
	// The axis is linear in log10 of the ratio (plot's LogScale misplaces
	// an axis label's glyph box, which pads the panel's top).
	p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		ticks := ratioTicks(math.Pow(10, lo), math.Pow(10, hi))
		for i := range ticks {
			ticks[i].Value = math.Log10(ticks[i].Value)
		}
		return ticks
	})
	p.label = "ns/op relative to " + c.baseLabel() + " per implementation, on a log scale"
	return p
}

// barPanel is a linear panel titled title, its Y axis labeled yLabel: a
// bar per impl of height vals[i] from 0, labeled by label, in the color
// of the impl's implClass, with Y ticks at round multiples of unit,
// labeled by tick.
func barPanel(title, yLabel string, impls []string, vals []float64, label func(float64) string, unit float64, tick func(float64) string) *panel {
	r := &bars{vals: vals}
	for i, v := range vals {
		r.labels = append(r.labels, label(v))
		r.colors = append(r.colors, implColors[implClass(impls[i])])
	}
	p := newPanel(title, yLabel, r)
	p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		var ticks []plot.Tick // the labeled ones: minor ticks add nothing to a bar
		for _, tk := range (plot.DefaultTicks{}).Ticks(lo/unit, hi/unit) {
			if tk.Label != "" {
				v := tk.Value * unit
				ticks = append(ticks, plot.Tick{Value: v, Label: tick(v)})
			}
		}
		return ticks
	})
	p.label = yLabel + " per implementation"
	return p
}

// newPanel is a panel of bars titled title with its Y axis labeled yLabel,
// in chartFont, with a light horizontal grid under the bars.
func newPanel(title, yLabel string, b *bars) *panel {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(chartFont, panelTitle)
	p.Title.Padding = 8
	p.Y.Label.Text = yLabel
	p.Y.Label.TextStyle.Font = font.From(chartFont, axisLabelSize)
	p.Y.Tick.Label.Font = font.From(chartFont, labelSize)
	p.X.Tick.Label.Font = font.From(chartFont, labelSize)
	p.Y.Padding = 0
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	grid.Horizontal.Color = color.Gray{0xe0}
	p.Add(grid, b)
	return &panel{Plot: p, bars: b}
}

// bars draws a bar per impl from base (1 on the log time panel, 0 on the
// linear ones) to vals[i]; on the log panel a dashed reference line at 1
// and whiskers from lo[i] to hi[i] where they differ; and each bar's
// label, past the end of bar and whisker that is away from base. On the
// log panel the Y axis is log10 of the values.
type bars struct {
	vals, lo, hi []float64 // lo and hi: nil for no whiskers
	labels       []string
	colors       []color.RGBA
	base         float64
	log          bool
}

// extent is the data range of bar i with its whisker: its least and
// greatest values, and whether its label goes below the least (a bar
// down from 1) rather than above the greatest.
func (b *bars) extent(i int) (lo, hi float64, below bool) {
	v := b.vals[i]
	lo, hi = min(v, b.base), max(v, b.base)
	if b.lo != nil {
		lo, hi = min(lo, b.lo[i]), max(hi, b.hi[i])
	}
	return lo, hi, v < b.base && b.labels[i] != "1×"
}

// y is where value v lies on the Y axis.
func (b *bars) y(v float64) float64 {
	if b.log {
		return math.Log10(v)
	}
	return v
}

// dataRange is the least and greatest value the bars and whiskers reach,
// on the Y axis.
func (b *bars) dataRange() (lo, hi float64) {
	lo, hi = b.base, b.base
	for i, v := range b.vals {
		if b.log && v <= 0 {
			continue
		}
		l, h, _ := b.extent(i)
		lo, hi = min(lo, l), max(hi, h)
	}
	if hi == lo { // all at base
		hi = lo + 1
		if b.log {
			hi = lo * 2
		}
	}
	return b.y(lo), b.y(hi)
}

// labelRoom is the height a value label takes past a bar's or whisker's
// end, in points, with the whisker cap's stroke.
func labelRoom() vg.Length {
	e := labelFace.Extents()
	return labelGap + e.Ascent + e.Descent + 1
}

// fit is the Y range that holds the bars and whiskers and, past their
// ends, their labels, in a data area h points high. On the log panel a
// label below a bar needs room under the range; elsewhere a small margin
// keeps the lowest bar off the axis.
func (b *bars) fit(h vg.Length) (lo, hi float64) {
	lo, hi = b.dataRange()
	top, bottom := labelRoom(), vg.Length(0)
	if b.log {
		bottom = 6
		for i, v := range b.vals {
			if _, _, below := b.extent(i); v > 0 && below {
				bottom = labelRoom()
			}
		}
	}
	// The data take h-top-bottom points of the h: scale the span to match.
	span := (hi - lo) * float64(h) / float64(h-top-bottom)
	return lo - span*float64(bottom/h), hi + span*float64(top/h)
}

// DataRange implements plot.DataRanger.
func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = b.dataRange()
	return -0.5, float64(len(b.vals)) - 0.5, ymin, ymax
}

// Plot implements plot.Plotter. It draws the bars a color at a time, then
// the whiskers, then the labels, so that the SVG holds a path per color
// and one of whiskers.
func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	base := trY(b.y(b.base))
	if b.log {
		ref := draw.LineStyle{Color: color.Gray{0x70}, Width: vg.Points(0.75), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
		c.StrokeLine2(ref, c.Min.X, base, c.Max.X, base)
	}
	half := barW / 2
	type span struct{ y0, y1 vg.Length } // a bar's, then with its whisker
	bar := make([]span, len(b.vals))
	for i, v := range b.vals {
		if b.log && v <= 0 {
			continue
		}
		y0, y1 := min(base, trY(b.y(v))), max(base, trY(b.y(v)))
		if b.log && y1-y0 < 3 { // about 1: a band on the reference line, to show the color
			y0, y1 = base-1.5, base+1.5
		}
		bar[i] = span{y0, y1}
	}
	for _, class := range []string{"memkit", "memkit-variant", "other"} {
		col := implColors[class]
		for i := range b.vals {
			if b.colors[i] == col && bar[i].y1 > bar[i].y0 {
				x := trX(float64(i))
				c.FillPolygon(col, c.ClipPolygonY([]vg.Point{{X: x - half, Y: bar[i].y0}, {X: x + half, Y: bar[i].y0}, {X: x + half, Y: bar[i].y1}, {X: x - half, Y: bar[i].y1}}))
			}
		}
	}
	whisker := draw.LineStyle{Color: color.Gray{0x30}, Width: vg.Points(1)}
	for i, v := range b.vals {
		if b.lo != nil && !(b.log && v <= 0) && b.hi[i] > b.lo[i]*1.0001 {
			x := trX(float64(i))
			lo, hi := trY(b.y(b.lo[i])), trY(b.y(b.hi[i]))
			c.StrokeLine2(whisker, x, lo, x, hi)
			c.StrokeLine2(whisker, x-half/2, lo, x+half/2, lo)
			c.StrokeLine2(whisker, x-half/2, hi, x+half/2, hi)
			bar[i] = span{min(bar[i].y0, lo-0.5), max(bar[i].y1, hi+0.5)}
		}
	}
	e := labelFace.Extents()
	c.SetColor(color.Black)
	for i, v := range b.vals {
		if b.log && v <= 0 {
			continue
		}
		baseline := bar[i].y1 + labelGap + e.Descent
		if _, _, below := b.extent(i); below {
			baseline = bar[i].y0 - labelGap - e.Ascent
		}
		c.FillString(labelFace, vg.Point{X: trX(float64(i)) - labelFace.Width(b.labels[i])/2, Y: baseline}, b.labels[i])
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
// over up to three decades (also at 1.5, 3 and 7 over less than one, where
// 1, 2 and 5 could leave one label), and beyond at every k-th power of
// ten alone, at most eight of them.
func ratioTicks(lo, hi float64) []plot.Tick {
	first, last := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	mults, step := []float64{1, 2, 5}, 1.0
	switch {
	case last-first > 3:
		mults, step = []float64{1}, math.Ceil((last-first+1)/8)
	case hi/lo < 10:
		mults = []float64{1, 1.5, 2, 3, 5, 7}
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

// binaryUnit is the power of 1024 at or below v (at least 1), so that byte
// ticks fall on round binary values: 16MiB, 32MiB, not 23.8MiB.
func binaryUnit(v float64) float64 {
	u := 1.0
	for u*1024 <= v {
		u *= 1024
	}
	return u
}

// compact prints a count without exponents, to four significant digits:
// 2000 as 2k, 1500000 as 1.5M.
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
