package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memkit/memkit/internal/e2e"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// report is what the tests read from an HTML report.
type report struct {
	charts []*chart          // the <svg class="chart"> elements, in order
	byID   map[string]string // the text of each element with an id
	rows   map[string]int    // <tr> rows in each section's table, by section id
	titles map[string]string // each section's <h2>, by section id
	// pageWidth is the width of the page's content at most, in CSS px,
	// the body's max-width.
	pageWidth float64
}

// chart is one <svg class="chart"> panel as drawn: its size, its texts
// and its shapes in the SVG's user space (points, y down).
type chart struct {
	section       string
	width, height float64 // the width and height attributes, in pt
	viewBoxWidth  float64
	texts         []svgText
	shapes        []svgShape
}

// svgText is a <text> element: its string, font size in user units and
// the box its glyphs take, from descender to ascender.
type svgText struct {
	s    string
	size float64
	box  []point
}

// svgShape is a <path>: a filled polygon or, for a stroke, a polygon per
// segment, as wide as the stroke; color is its fill or stroke.
type svgShape struct {
	polys [][]point
	color string
}

type point struct{ x, y float64 }

// affine is an SVG transform matrix(a b c d e f).
type affine [6]float64

var identity = affine{1, 0, 0, 1, 0, 0}

func (m affine) mul(n affine) affine {
	return affine{
		m[0]*n[0] + m[2]*n[1], m[1]*n[0] + m[3]*n[1],
		m[0]*n[2] + m[2]*n[3], m[1]*n[2] + m[3]*n[3],
		m[0]*n[4] + m[2]*n[5] + m[4], m[1]*n[4] + m[3]*n[5] + m[5],
	}
}

func (m affine) apply(p point) point {
	return point{m[0]*p.x + m[2]*p.y + m[4], m[1]*p.x + m[3]*p.y + m[5]}
}

var (
	svgTransformFn = regexp.MustCompile(`(\w+)\(([^)]*)\)`)
	svgNumber      = regexp.MustCompile(`-?[0-9.]+(?:e-?[0-9]+)?`)
	svgPathCmds    = regexp.MustCompile(`([MLHVZ])([^MLHVZ]*)`)
	svgTextSize    = regexp.MustCompile(`svg\.chart text \{[^}]*font-size: ([0-9.]+)px`)
	cssChart       = regexp.MustCompile(`svg\.chart \{[^}]*\}`)
	cssBodyWidth   = regexp.MustCompile(`body \{[^}]*max-width: ([0-9]+)px`)
	svgStyleProp   = regexp.MustCompile(`([a-z-]+):([^;]*)`)
)

func numbers(t *testing.T, s string) []float64 {
	t.Helper()
	var v []float64
	for _, n := range svgNumber.FindAllString(s, -1) {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
			t.Fatalf("number %q in %q: %v", n, s, err)
		}
		v = append(v, f)
	}
	return v
}

// parseTransform reads the scale, translate and rotate functions plot's
// SVG canvas writes.
func parseTransform(t *testing.T, s string) affine {
	m := identity
	for _, f := range svgTransformFn.FindAllStringSubmatch(s, -1) {
		a := numbers(t, f[2])
		switch {
		case f[1] == "scale" && len(a) == 2:
			m = m.mul(affine{a[0], 0, 0, a[1], 0, 0})
		case f[1] == "translate" && len(a) == 2:
			m = m.mul(affine{1, 0, 0, 1, a[0], a[1]})
		case f[1] == "rotate" && (len(a) == 1 || len(a) == 3):
			sin, cos := math.Sincos(a[0] * math.Pi / 180)
			r := affine{cos, sin, -sin, cos, 0, 0}
			if len(a) == 3 { // about (a[1], a[2])
				r = affine{1, 0, 0, 1, a[1], a[2]}.mul(r).mul(affine{1, 0, 0, 1, -a[1], -a[2]})
			}
			m = m.mul(r)
		default:
			t.Fatalf("transform %q: cannot read %s", s, f[0])
		}
	}
	return m
}

func styleProps(s string) map[string]string {
	props := map[string]string{}
	for _, m := range svgStyleProp.FindAllStringSubmatch(s, -1) {
		props[m[1]] = m[2]
	}
	return props
}

// parsePath reads a path of M, L and Z commands, as plot writes bars,
// lines and the background, under the transform m.
func parsePath(t *testing.T, m affine, d string, props map[string]string) svgShape {
	var (
		subpaths [][]point // a subpath per M, untransformed
		cur      point
	)
	for _, c := range svgPathCmds.FindAllStringSubmatch(d, -1) {
		a := numbers(t, c[2])
		switch {
		case c[1] == "M" && len(a) == 2:
			cur = point{a[0], a[1]}
			subpaths = append(subpaths, []point{cur})
			continue
		case c[1] == "L" && len(a) == 2:
			cur = point{a[0], a[1]}
		case c[1] == "H" && len(a) == 1:
			cur.x = a[0]
		case c[1] == "V" && len(a) == 1:
			cur.y = a[0]
		case c[1] == "Z" && len(a) == 0:
			continue
		default:
			t.Fatalf("path %q: cannot read %s", d, c[0])
		}
		if len(subpaths) == 0 {
			t.Fatalf("path %q: %s before M", d, c[0])
		}
		subpaths[len(subpaths)-1] = append(subpaths[len(subpaths)-1], cur)
	}
	color, w := props["fill"], 0.0
	if color == "none" {
		color, w = props["stroke"], 1.0
		if sw, ok := props["stroke-width"]; ok {
			w = numbers(t, sw)[0]
		}
	} else if color == "" {
		color = "#000000"
	}
	sh := svgShape{color: color}
	for _, pts := range subpaths {
		for i := range pts {
			pts[i] = m.apply(pts[i])
		}
		if w == 0 { // filled
			sh.polys = append(sh.polys, pts)
			continue
		}
		for i := 1; i < len(pts); i++ {
			p, q := pts[i-1], pts[i]
			l := math.Hypot(q.x-p.x, q.y-p.y)
			if l == 0 {
				continue
			}
			nx, ny := -(q.y-p.y)/l*w/2, (q.x-p.x)/l*w/2
			sh.polys = append(sh.polys, []point{{p.x + nx, p.y + ny}, {q.x + nx, q.y + ny}, {q.x - nx, q.y - ny}, {p.x - nx, p.y - ny}})
		}
	}
	return sh
}

// textBox is the box of s drawn at (x, y) in size-unit chartFont, under
// the transform m: its advance wide, from its descender to its ascender.
func textBox(m affine, x, y, size float64, s string) []point {
	face := font.DefaultCache.Lookup(font.From(chartFont, vg.Length(size)), vg.Length(size))
	w, e := float64(face.Width(s)), face.Extents()
	top, bottom := y-float64(e.Ascent), y+float64(e.Descent)
	return []point{m.apply(point{x, top}), m.apply(point{x + w, top}), m.apply(point{x + w, bottom}), m.apply(point{x, bottom})}
}

// overlap reports whether convex polygons a and b overlap by more than
// a twentieth of a point along every axis of their edges.
func overlap(a, b []point) bool {
	for _, poly := range [][]point{a, b} {
		for i := range poly {
			p, q := poly[i], poly[(i+1)%len(poly)]
			ax, ay := -(q.y - p.y), q.x-p.x
			l := math.Hypot(ax, ay)
			if l == 0 {
				continue
			}
			ax, ay = ax/l, ay/l
			proj := func(ps []point) (lo, hi float64) {
				lo, hi = math.Inf(1), math.Inf(-1)
				for _, p := range ps {
					v := p.x*ax + p.y*ay
					lo, hi = min(lo, v), max(hi, v)
				}
				return lo, hi
			}
			alo, ahi := proj(a)
			blo, bhi := proj(b)
			if min(ahi, bhi)-max(alo, blo) <= 0.05 {
				return false
			}
		}
	}
	return true
}

// xmlNamespaces are the only URLs a report may hold: SVG's namespace
// names, which are never fetched.
var xmlNamespaces = map[string]bool{
	"http://www.w3.org/2000/svg":   true,
	"http://www.w3.org/1999/xlink": true, // in vgsvg's output, which TestCompactSVG_SamePicture reads
}

// parseReport checks that page is well-formed XML that loads nothing from
// elsewhere (no script, link, img, iframe, object or embed element, no src
// attribute, no href but to an anchor in the page, no URL but the SVG
// namespaces, no CSS url() but data:), and returns what it holds.
func parseReport(t *testing.T, page string) report {
	t.Helper()
	for _, u := range regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://[^\s"'<>)]*`).FindAllString(page, -1) {
		if !xmlNamespaces[u] {
			t.Errorf("report refers to %s", u)
		}
	}
	for _, m := range regexp.MustCompile(`url\(\s*["']?([a-z]*)`).FindAllStringSubmatch(page, -1) {
		if m[1] != "data" {
			t.Errorf("CSS url() of other than data: %q", m[0])
		}
	}
	rep := report{byID: map[string]string{}, rows: map[string]int{}, titles: map[string]string{}}
	// The size of the charts' texts that set none.
	defaultSize := 0.0
	if m := svgTextSize.FindStringSubmatch(page); m != nil {
		defaultSize = numbers(t, m[1])[0]
	}
	// A chart is drawn at its size: no CSS scales it to the page.
	for _, rule := range cssChart.FindAllString(page, -1) {
		if strings.Contains(rule, "width") || strings.Contains(rule, "height") {
			t.Errorf("CSS %q sizes the charts", rule)
		}
	}
	if m := cssBodyWidth.FindStringSubmatch(page); m != nil {
		rep.pageWidth = numbers(t, m[1])[0]
	} else {
		t.Errorf("no max-width on the page's body")
	}
	d := xml.NewDecoder(strings.NewReader(page))
	type open struct {
		name string
		id   string
		text strings.Builder
		m    affine // the SVG transform, within a chart
		x, y float64
		size float64
	}
	var (
		stack   []*open
		section string
		cur     *chart
	)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("report is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			o := &open{name: tok.Name.Local, m: identity}
			if len(stack) > 0 {
				o.m = stack[len(stack)-1].m
			}
			attr := map[string]string{}
			for _, a := range tok.Attr {
				attr[a.Name.Local] = a.Value
				switch {
				case a.Name.Local == "id":
					o.id = a.Value
				case a.Name.Local == "src":
					t.Errorf("<%s src=%q>", tok.Name.Local, a.Value)
				case a.Name.Local == "href" && !strings.HasPrefix(a.Value, "#"):
					t.Errorf("<%s href=%q>", tok.Name.Local, a.Value)
				}
			}
			if tr, ok := attr["transform"]; ok && cur != nil {
				o.m = o.m.mul(parseTransform(t, tr))
			}
			props := styleProps(attr["style"])
			switch tok.Name.Local {
			case "script", "link", "img", "iframe", "object", "embed", "base":
				t.Errorf("report has a <%s> element", tok.Name.Local)
			case "section":
				section = o.id
			case "tr":
				rep.rows[section]++
			case "svg":
				if attr["class"] == "chart" {
					cur = &chart{section: section}
					w, h, vb := numbers(t, attr["width"]), numbers(t, attr["height"]), numbers(t, attr["viewBox"])
					if !strings.HasSuffix(attr["width"], "pt") || !strings.HasSuffix(attr["height"], "pt") || len(w) != 1 || len(h) != 1 || len(vb) != 4 {
						t.Fatalf("chart <svg width=%q height=%q viewBox=%q>: want sizes in pt", attr["width"], attr["height"], attr["viewBox"])
					}
					cur.width, cur.height, cur.viewBoxWidth = w[0], h[0], vb[2]
					rep.charts = append(rep.charts, cur)
				}
			case "text":
				if cur != nil {
					o.x, o.y = numbers(t, attr["x"])[0], numbers(t, attr["y"])[0]
					o.size = defaultSize
					if fs, ok := props["font-size"]; ok {
						o.size = numbers(t, fs)[0]
					}
					if o.size == 0 {
						t.Fatalf("<text> without a font-size: %v", tok.Attr)
					}
				}
			case "path":
				if cur != nil {
					cur.shapes = append(cur.shapes, parsePath(t, o.m, attr["d"], props))
				}
			}
			stack = append(stack, o)
		case xml.CharData:
			for _, o := range stack {
				o.text.Write(tok)
			}
		case xml.EndElement:
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if o.id != "" {
				rep.byID[o.id] = o.text.String()
			}
			switch {
			case o.name == "h2":
				rep.titles[section] = o.text.String()
			case o.name == "svg":
				cur = nil
			case o.name == "text" && cur != nil:
				s := o.text.String()
				cur.texts = append(cur.texts, svgText{s: s, size: o.size, box: textBox(o.m, o.x, o.y, o.size, s)})
			}
		}
	}
	return rep
}

// chartTexts is the text of every <text> in the report's charts, a line
// each.
func (rep report) chartTexts() string {
	var b strings.Builder
	for _, c := range rep.charts {
		for _, tx := range c.texts {
			b.WriteString(tx.s)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// checkCharts checks what makes the charts readable at 100% zoom: each
// drawn at its size (parseReport checks that no CSS sizes it) and as wide
// as the page's content at most, every text at least 11 CSS px,
// every panel's value axis labeled with its unit, and no text overlapping
// another or any bar, whisker, axis or tick mark (the faint grid lines
// and the white background aside).
func checkCharts(t *testing.T, rep report) {
	t.Helper()
	units := []string{"allocs/op", "bytes"}
	for i, c := range rep.charts {
		name := fmt.Sprintf("chart %d (section %s)", i+1, c.section)
		if px := c.width * pxPerPt; px > rep.pageWidth {
			t.Errorf("%s is %.0f px wide; the page holds %.0f", name, px, rep.pageWidth)
		}
		scale := c.width / c.viewBoxWidth * pxPerPt // CSS px per user unit
		labeled := 0
		for _, tx := range c.texts {
			if px := tx.size * scale; px < 11 {
				t.Errorf("%s: %q is %.1f px; want 11 or more", name, tx.s, px)
			}
			if slices.Contains(units, tx.s) || strings.HasSuffix(tx.s, "'s ns/op (log scale)") {
				labeled++
			}
		}
		if labeled != 1 {
			t.Errorf("%s: %d axis labels name a unit (ns/op, %s), want 1", name, labeled, strings.Join(units, ", "))
		}
		for j, a := range c.texts {
			for _, b := range c.texts[j+1:] {
				if overlap(a.box, b.box) {
					t.Errorf("%s: texts %q and %q overlap", name, a.s, b.s)
				}
			}
			for _, sh := range c.shapes {
				if sh.color == "#E0E0E0" || sh.color == "#FFFFFF" {
					continue
				}
				for _, poly := range sh.polys {
					if overlap(a.box, poly) {
						t.Errorf("%s: a shape in %s is drawn over %q (%v, text box %v)", name, sh.color, a.s, poly, a.box)
						break
					}
				}
			}
		}
	}
}

// checkMachine checks the report's machine line against this machine.
func checkMachine(t *testing.T, rep report) {
	t.Helper()
	line := rep.byID["machine"]
	for _, want := range []string{
		"goos: " + runtime.GOOS, "goarch: " + runtime.GOARCH, "cpu: " + cpuModel(),
		"go: " + runtime.Version(), fmt.Sprintf("GOMAXPROCS: %d", runtime.GOMAXPROCS(0)),
	} {
		if !strings.Contains(line, want) {
			t.Errorf("machine line %q lacks %q", line, want)
		}
	}
}

func TestRun_HTML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.html")
	args := []string{"bench", "--filter", "GetPut/size=(64B|4KiB)/impl=(memkit|make|syncpool)$", "--benchtime", "10x", "--no-progress", "--html", path}
	out, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	// The normal output is still there.
	if !strings.Contains(out, "\nGetPut/size=4KiB\n") || !strings.Contains(out, "goos: ") {
		t.Errorf("no table on stdout:\n%s", out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rep := parseReport(t, string(data))
	for id, wl := range map[string]string{"w1": "GetPut/size=64B", "w2": "GetPut/size=4KiB"} {
		if rep.titles[id] != wl {
			t.Errorf("section %s is titled %q, want %s", id, rep.titles[id], wl)
		}
		// The time panel, and allocations for make.
		var texts []string
		for _, c := range rep.charts {
			if c.section == id {
				texts = append(texts, c.texts[0].s)
			}
		}
		if want := []string{"time per op, relative to memkit", "allocations"}; !slices.Equal(texts, want) {
			t.Errorf("section %s has the charts %q, want %q", id, texts, want)
		}
	}
	checkCharts(t, rep)
	checkMachine(t, rep)
	if run := rep.byID["run"]; !strings.Contains(run, "benchtime: 10x") || !strings.Contains(run, "count: 1") {
		t.Errorf("run line %q lacks benchtime or count", run)
	}
	wantCmd := `memkit bench --filter 'GetPut/size=(64B|4KiB)/impl=(memkit|make|syncpool)$' --benchtime 10x --no-progress --html ` + path
	if got := rep.byID["command"]; got != wantCmd {
		t.Errorf("command line\n%s\nwant\n%s", got, wantCmd)
	}
	for _, id := range []string{"w1", "w2"} {
		if rep.rows[id] != 4 { // the header and 3 impls
			t.Errorf("section %s has %d table rows, want 4", id, rep.rows[id])
		}
	}
	// Small enough to attach to an issue: no embedded font.
	if len(data) > 64<<10 {
		t.Errorf("report of 2 workloads is %d bytes; want under 64KiB", len(data))
	}
}

// TestWriteHTML_SpreadRetainedColors checks what the report shows beyond
// medians: the min–max over runs when there are several, the memory a
// burst workload retained, memkit's own packages in memkit's colors, and
// no allocations panel when every allocs/op is zero.
func TestWriteHTML_SpreadRetainedColors(t *testing.T) {
	rs := fakeResults([]string{"SlabAllocFree/size=64B"}, []string{"memkit", "bytepool", "syncpool"}, []float64{40, 50, 60}, []float64{0, 0, 0})
	for i := range rs { // a second, slower run of each
		r := rs[i].runs[0]
		r.T = r.T * 11 / 10
		rs[i].runs = append(rs[i].runs, r)
	}
	burst := fakeResults([]string{"BurstIdle/size=64KiB"}, []string{"memkit", "make"}, []float64{1e9, 2e9}, []float64{1, 8192})
	for i, v := range []float64{1 << 20, 512 << 20} {
		burst[i].runs[0].Extra = map[string]float64{retainedMetric: v}
		burst[i].runs = append(burst[i].runs, burst[i].runs[0])
	}
	var b bytes.Buffer
	if err := writeHTML(&b, "memkit bench --count 2", fakeEnv(), append(rs, burst...)); err != nil {
		t.Fatal(err)
	}
	rep := parseReport(t, b.String())
	checkCharts(t, rep)
	texts := rep.chartTexts()
	for _, want := range []string{"retained after the burst\n", "bytes\n", "1MiB", "512MiB"} {
		if !strings.Contains(texts, want) {
			t.Errorf("chart texts lack %q:\n%s", want, texts)
		}
	}
	if strings.Count(texts, "allocations\n") != 1 || strings.Count(texts, "allocs/op\n") != 1 {
		t.Errorf("want an allocations panel for BurstIdle only:\n%s", texts)
	}
	page := b.String()
	for _, want := range []string{"<th>min–max</th>", "<td>52.5 ns</td><td>50.0–55.0 ns</td><td>0 B</td><td>0 allocs</td><td>1.25×</td>",
		`<td>2.00 s</td><td>2.00–2.00 s</td><td>512 KiB</td><td>8192 allocs</td><td>2.00×</td><td class="extra">retained: 512 MiB</td>`,
		`<td>1.00 s</td><td>1.00–1.00 s</td><td>64 B</td><td>1 alloc</td><td>1.00×</td><td class="extra">retained: 1 MiB</td>`, `<tr class="memkit-variant"><td>bytepool</td>`, "the whisker spans"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s\n%s", want, page[strings.Index(page, "<tbody>"):])
		}
	}
	// Whiskers: three strokes (stem and two caps) per impl with a spread:
	// the slab workload's three; the burst's runs are alike.
	n := 0
	for _, c := range rep.charts {
		for _, sh := range c.shapes {
			if sh.color == "#303030" {
				n += len(sh.polys)
			}
		}
	}
	if n != 3*3 {
		t.Errorf("%d whisker strokes; want 3 per impl", n)
	}
	for impl, want := range map[string]string{"memkit": "memkit", "memkit-bounded": "memkit-variant", "bytepool": "memkit-variant", "slab": "memkit-variant", "syncpool": "other", "memkitish": "other"} {
		if got := implClass(impl); got != want {
			t.Errorf("implClass(%q) = %q; want %q", impl, got, want)
		}
	}
}

func TestFormatRatio(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0"}, {0.0004, "1/2.5k×"}, {0.05, "0.05×"}, {0.523, "0.52×"}, {1, "1×"}, {3.44, "3.4×"}, {123.4, "123×"}, {12101, "12k×"}, {2e9, "2G×"}} {
		if got := formatRatio(tc.v); got != tc.want {
			t.Errorf("formatRatio(%v) = %q; want %q", tc.v, got, tc.want)
		}
	}
}

func TestRun_HTMLErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(dir, "no-such-dir", "r.html"), filepath.Join(dir, "file", "r.html"), dir}
	// A directory the run cannot create files in; root can, whatever the mode.
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Join(ro, "r.html"))
	}
	for _, path := range paths {
		// A benchtime of an hour: the check must come before the run.
		out, err := runCLI(t, "bench", "--filter", "GetPut/size=64B/impl=memkit$", "--benchtime", "1h", "--html", path)
		if err == nil || !strings.Contains(err.Error(), "--html") || !errors.As(err, new(usageError)) {
			t.Errorf("--html %s: error %v, want a usage error about --html", path, err)
		}
		if out != "" {
			t.Errorf("--html %s: the run went ahead:\n%s", path, out)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".memkit-report-") {
			t.Errorf("the check left %s behind", e.Name())
		}
	}
	out, err := runCLI(t, "bench", "-h")
	if err != nil || !strings.Contains(out, "-html file") {
		t.Errorf("bench -h does not document --html: %v\n%s", err, out)
	}
}

// fakeResults makes results of one run each: per workload, an impl per
// entry of ns, with ns[i] ns/op and allocs[i] allocs/op.
func fakeResults(workloads []string, impls []string, ns, allocs []float64) []result {
	const n = 1000
	var rs []result
	for _, wl := range workloads {
		for i, im := range impls {
			rs = append(rs, result{
				bench: &bench{workload: wl, impl: im},
				runs: []testing.BenchmarkResult{{
					N: n, T: time.Duration(ns[i] * n),
					MemAllocs: uint64(allocs[i] * n), MemBytes: uint64(allocs[i] * 64 * n),
				}},
			})
		}
	}
	return rs
}

func fakeEnv() env {
	return env{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPU: cpuModel(), Go: runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), Date: "2025-01-02T03:04:05Z", Benchtime: "1s", Count: 1}
}

// TestWriteHTML_Shapes renders charts that are easy to get wrong: many
// impls (rotated labels) over a range of 1:1,000,000 (a log axis with a
// label per power of ten, not one per 1-2-5), one impl, all-zero values
// (no chart at all), no memkit (times relative to the fastest), names that
// need escaping.
func TestWriteHTML_Shapes(t *testing.T) {
	many := []string{"memkit", "memkit-cache", "memkit-bounded", "make", "syncpool", "mcache", "bytebufferpool", "libp2p", "grpc", "chan-only", "a-rather-long-impl-name", "x"}
	seq := func(n int, f func(i int) float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}
	var rs []result
	rs = append(rs, fakeResults([]string{"Many/size=64B"}, many,
		seq(len(many), func(i int) float64 { return float64(10 + 1000*i*i) }),
		seq(len(many), func(i int) float64 { return float64(i % 3) }))...)
	rs = append(rs, fakeResults([]string{"One"}, []string{"memkit"}, []float64{5}, []float64{0})...)
	rs = append(rs, fakeResults([]string{"Zero"}, []string{"memkit", "make"}, []float64{0, 0}, []float64{0, 0})...)
	rs = append(rs, fakeResults([]string{`Esc/<a&b>"'`}, []string{"make", `<i>&"'`}, []float64{1e9, 0.5}, []float64{0.001, 2})...)
	var b bytes.Buffer
	if err := writeHTML(&b, commandLine([]string{"--filter", `<&>"'`}), fakeEnv(), rs); err != nil {
		t.Fatal(err)
	}
	rep := parseReport(t, b.String())
	checkCharts(t, rep)
	perSection := map[string]int{}
	for _, c := range rep.charts {
		perSection[c.section]++
	}
	// Time and allocations, time alone, none for the all-zero workload.
	if want := map[string]int{"w1": 2, "w2": 1, "w4": 2}; !maps.Equal(perSection, want) {
		t.Errorf("charts per section %v, want %v", perSection, want)
	}
	if got := rep.titles["w4"]; got != `Esc/<a&b>"'` {
		t.Errorf("section w4 titled %q", got)
	}
	if !strings.Contains(rep.byID["w3"], "No chart: every figure is zero.") {
		t.Errorf("the all-zero workload's section: %q", rep.byID["w3"])
	}
	checkMachine(t, rep)
	if got, want := rep.byID["command"], `memkit bench --filter '<&>"'\'''`; got != want {
		t.Errorf("command line %q, want %q", got, want)
	}
	texts := rep.chartTexts()
	for _, want := range []string{`<i>&"'`, "a-rather-long-impl-name",
		"time per op, relative to memkit", "time per op, relative to the fastest", "× the fastest's ns/op (log scale)", "2G×", "1×", "12k×", "10k×", "100k×"} {
		if !strings.Contains(texts, want) {
			t.Errorf("chart texts lack %q:\n%s", want, texts)
		}
	}
	if strings.Contains(texts, "e+") || strings.Contains(texts, "e-") || strings.Contains(texts, "0.00\n") {
		t.Errorf("chart texts in exponent notation or zero as 0.00:\n%s", texts)
	}
	if n := strings.Count(texts, "×\n"); n > 40 {
		t.Errorf("%d ratio labels: the log axes are crowded\n%s", n, texts)
	}
	if rep.rows["w1"] != len(many)+1 || rep.rows["w2"] != 2 || rep.rows["w3"] != 3 || rep.rows["w4"] != 3 {
		t.Errorf("table rows per section: %v", rep.rows)
	}
}

func TestFormatCount(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {1, "1"}, {1.0000015, "1"}, {1.5e-6, "0"}, {0.02, "0.02"}, {0.5, "0.5"},
		{5.76, "5.76"}, {37.2, "37.2"}, {40, "40"}, {4096, "4096"}, {1048576, "1048576"}, {1e9, "1000000000"},
	} {
		if got := formatCount(tc.v); got != tc.want {
			t.Errorf("formatCount(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "memkit bench"},
		{[]string{"--count", "6", "--format=bench"}, "memkit bench --count 6 --format=bench"},
		{[]string{"--filter", "GetPut/size=64B/impl=(memkit|make)$"}, "memkit bench --filter 'GetPut/size=64B/impl=(memkit|make)$'"},
		{[]string{"--filter", "it's"}, `memkit bench --filter 'it'\''s'`},
		{[]string{""}, "memkit bench ''"},
	} {
		if got := commandLine(tc.args); got != tc.want {
			t.Errorf("commandLine(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
}

// TestHTML_Chromium renders a report of two workloads of five impls in
// headless Chromium and checks what a person would see: a chart per
// workload in the DOM, and a screenshot that is not blank and shows
// memkit's bars in their color.
func TestHTML_Chromium(t *testing.T) {
	e2e.Chromium(t) // skip before the work when there is none
	impls := []string{"memkit", "memkit-cache", "make", "syncpool", "grpc"}
	rs := fakeResults([]string{"GetPut/size=64B", "GetPut/size=4KiB"}, impls,
		[]float64{40, 30, 120, 60, 80}, []float64{0, 0, 1, 0, 0.5})
	path := filepath.Join(t.TempDir(), "report.html")
	var b bytes.Buffer
	if err := writeHTML(&b, commandLine([]string{"--html", path}), fakeEnv(), rs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	img, dom := renderInChromium(t, (&url.URL{Scheme: "file", Path: path}).String())

	// Time and allocations (make and grpc allocate) for each workload.
	if n := len(regexp.MustCompile(`<svg[^>]*class="chart"`).FindAllString(dom, -1)); n != 4 {
		t.Errorf("DOM has %d chart <svg> elements, want 4", n)
	}
	// Each panel's Y axis, grid and bars of at least one color.
	if n := strings.Count(dom, "<path"); n < 4*3 {
		t.Errorf("DOM charts have %d paths", n)
	}
	for _, want := range []string{"memkit bench report", "GOMAXPROCS: ", "<h2>GetPut/size=4KiB</h2>", ">time per op, relative to memkit</text>", "memkit bench --html "} {
		if !strings.Contains(dom, want) {
			t.Errorf("DOM lacks %q", want)
		}
	}

	if got := img.Bounds().Size(); got != (image.Point{1200, 2000}) {
		t.Errorf("screenshot is %v, want 1200x2000", got)
	}
	colors, nonWhite, memkit := map[color.RGBA]bool{}, 0, 0
	bar := implColors["memkit"]
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			colors[c] = true
			if c.R < 0xf0 || c.G < 0xf0 || c.B < 0xf0 {
				nonWhite++
			}
			if near(c, bar, 8) {
				memkit++
			}
		}
	}
	total := img.Bounds().Dx() * img.Bounds().Dy()
	t.Logf("screenshot: %d colors, %.1f%% not white, %d pixels of memkit's color", len(colors), 100*float64(nonWhite)/float64(total), memkit)
	if len(colors) < 32 {
		t.Errorf("screenshot has %d colors: blank?", len(colors))
	}
	if nonWhite < total/50 {
		t.Errorf("screenshot is %.2f%% not white: blank?", 100*float64(nonWhite)/float64(total))
	}
	// memkit is the base of the time panels: a band on their line at 1×,
	// some 40x4 px each, with the legend swatch and the table's names.
	if memkit < 300 {
		t.Errorf("%d pixels of memkit's color %v; want its bars to show", memkit, bar)
	}
	if t.Failed() {
		keep := filepath.Join(os.TempDir(), "memkit-report-screenshot.png")
		if f, err := os.Create(keep); err == nil {
			if png.Encode(f, img) == nil && f.Close() == nil {
				t.Logf("screenshot kept in %s", keep)
			}
		}
	}
}

// near reports whether a and b differ by at most d in each channel.
func near(a, b color.RGBA, d int) bool {
	diff := func(x, y uint8) bool { return int(x)-int(y) <= d && int(y)-int(x) <= d }
	return diff(a.R, b.R) && diff(a.G, b.G) && diff(a.B, b.B)
}

// fullRun is a synthetic run of every registered bench, count times, with
// a spread over the runs, allocations and the extra metrics the workloads
// report: the largest report a run of this build writes.
func fullRun(count int) []result {
	var rs []result
	for i := range benches {
		bn := &benches[i]
		ns := float64(20 + 37*(i%11))
		allocs := float64(i % 3)
		r := result{bench: bn}
		for k := range count {
			br := testing.BenchmarkResult{N: 1000, T: time.Duration(ns * float64(1000+50*k)), MemAllocs: uint64(allocs * 1000), MemBytes: uint64(allocs * 4096 * 1000)}
			switch {
			case strings.HasPrefix(bn.workload, "BurstIdle/"):
				br.Extra = map[string]float64{"heap-fallbacks": 7168, "peak-reserved-B": 512 << 20, "retained-%": 12.5, retainedMetric: float64(i%4) * (64 << 20)}
			case strings.HasPrefix(bn.workload, "Extent"):
				br.Extra = map[string]float64{"reserved/live": 1.37, "reserved/peak-live": 1.02}
			}
			r.runs = append(r.runs, br)
		}
		rs = append(rs, r)
	}
	return rs
}

// TestWriteHTML_FullRun checks a report of every bench, as `memkit bench
// --count 3 --html` writes it: readable charts, and the size docs/commands.md
// states.
func TestWriteHTML_FullRun(t *testing.T) {
	var b bytes.Buffer
	if err := writeHTML(&b, "memkit bench --count 3 --html r.html", fakeEnv(), fullRun(3)); err != nil {
		t.Fatal(err)
	}
	rep := parseReport(t, b.String())
	checkCharts(t, rep)
	t.Logf("%d benches, %d charts: %d bytes", len(benches), len(rep.charts), b.Len())
	// docs/commands.md's sentence about --html states these sizes.
	// Per bench, so that registering a workload does not break the claim.
	if per := b.Len() / len(benches); per > 1100 {
		t.Errorf("the report of every bench is %d bytes, %d a bench; docs/commands.md says at most 1.1 KB a bench", b.Len(), per)
	}
	few := regexp.MustCompile(`^(GetPut/size=4KiB|BurstIdle|SlabAllocFree/)`)
	var sel []result
	for _, r := range fullRun(3) {
		if few.MatchString(r.bench.workload) {
			sel = append(sel, r)
		}
	}
	b.Reset()
	if err := writeHTML(&b, "memkit bench --count 3 --filter x --html r.html", fakeEnv(), sel); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d benches: %d bytes", len(sel), b.Len())
	if b.Len() > 40_000 {
		t.Errorf("the report of %d benches is %d bytes; docs/commands.md says some 30 KB for a few workloads", len(sel), b.Len())
	}
}

// TestCompactSVG_SamePicture checks that compactSVG changes the bytes of a
// panel, not its picture: the same texts at the same places (within the
// tenth of a point it rounds to) and the same shapes but the white
// background.
func TestCompactSVG_SamePicture(t *testing.T) {
	impls := []string{"memkit", "memkit-cache", "make", "syncpool", "a-rather-long-impl-name", "x"}
	c := &chartData{
		name:     "Burst/size=64KiB",
		impls:    impls,
		ns:       []float64{40, 30, 4000, 60, 80, 0.5},
		lo:       []float64{38, 20, 3000, 60, 70, 0.4},
		hi:       []float64{45, 33, 9000, 60, 90, 0.6},
		allocs:   []float64{0, 0, 1, 0.25, 2000, 0},
		retained: []float64{1 << 20, 0, 512 << 20, 64 << 10, 3 << 30, 0},
	}
	panels, rotate := workloadPanels(c)
	if len(panels) != 3 || !rotate {
		t.Fatalf("%d panels, rotate %v; want 3 with turned labels", len(panels), rotate)
	}
	const css = `<style>body { max-width: 1180px; } svg.chart text { font-size: 9px; }</style>`
	page := func(svg string) string {
		return `<html><head>` + css + `</head><body><section id="s"><svg class="chart"` + svg + `</section></body></html>`
	}
	for _, p := range panels {
		raw, err := p.svg(c, rotate)
		if err != nil {
			t.Fatal(err)
		}
		compacted := compactSVG(raw, chartHeight)
		t.Logf("%s: %d bytes, %d compacted", p.label, len(raw), len(compacted))
		a, b := parseReport(t, page(raw)).charts[0], parseReport(t, page(compacted)).charts[0]
		if a.width != b.width || a.height != b.height || a.viewBoxWidth != b.viewBoxWidth {
			t.Errorf("%s: size %vx%v (%v) compacted to %vx%v (%v)", p.label, a.width, a.height, a.viewBoxWidth, b.width, b.height, b.viewBoxWidth)
		}
		texts := func(c *chart) []string {
			var s []string
			for _, tx := range c.texts {
				s = append(s, fmt.Sprintf("%s %.0f %s", tx.s, tx.size, polyKey(tx.box)))
			}
			slices.Sort(s)
			return s
		}
		shapes := func(c *chart) []string {
			var s []string
			for _, sh := range c.shapes {
				for _, poly := range sh.polys {
					if sh.color != "#FFFFFF" {
						s = append(s, sh.color+" "+polyKey(poly))
					}
				}
			}
			slices.Sort(s)
			return s
		}
		for _, cmp := range []struct {
			what string
			a, b []string
		}{{"texts", texts(a), texts(b)}, {"shapes", shapes(a), shapes(b)}} {
			if len(cmp.a) == 0 || !slices.EqualFunc(cmp.a, cmp.b, nearKeys) {
				t.Errorf("%s: %s\n%s\ncompacted to\n%s", p.label, cmp.what, strings.Join(cmp.a, "\n"), strings.Join(cmp.b, "\n"))
			}
		}
	}
}

// polyKey prints a polygon's points to a tenth of a point.
func polyKey(poly []point) string {
	var b strings.Builder
	for _, p := range poly {
		fmt.Fprintf(&b, " %.1f,%.1f", p.x, p.y)
	}
	return b.String()
}

// nearKeys reports whether two polyKey lines say the same but for numbers
// that differ by at most 0.15 (a rounding to 0.1 on each side).
func nearKeys(a, b string) bool {
	na, nb := svgNumber.FindAllStringIndex(a, -1), svgNumber.FindAllStringIndex(b, -1)
	if len(na) != len(nb) || svgNumber.ReplaceAllString(a, "#") != svgNumber.ReplaceAllString(b, "#") {
		return false
	}
	for i := range na {
		x, _ := strconv.ParseFloat(a[na[i][0]:na[i][1]], 64)
		y, _ := strconv.ParseFloat(b[nb[i][0]:nb[i][1]], 64)
		if math.Abs(x-y) > 0.15 {
			return false
		}
	}
	return true
}

func TestRatioTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0.5, 3, "0.5× 0.7× 1× 1.5× 2× 3×"}, // under a decade: more than 0.5, 1 and 2
		{0.8, 40, "1× 2× 5× 10× 20×"},
		{1e-3, 1e6, "0.001× 0.1× 10× 1k× 100k×"}, // nine decades: every other one
	} {
		var got []string
		for _, tk := range ratioTicks(tc.lo, tc.hi) {
			got = append(got, tk.Label)
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("ratioTicks(%v, %v) = %s; want %s", tc.lo, tc.hi, s, tc.want)
		}
	}
}
