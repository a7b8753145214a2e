package prom_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/memkit/memkit/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

const dashboardPath = "dashboards/memkit.json"

// dashboard is the part of Grafana's dashboard JSON model the tests read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int          `json:"id"`
	Type       string       `json:"type"`
	Title      string       `json:"title"`
	Desc       string       `json:"description"`
	Datasource *datasource  `json:"datasource"`
	GridPos    *gridPos     `json:"gridPos"`
	Targets    []target     `json:"targets"`
	Panels     []panel      `json:"panels"` // a collapsed row's
	Options    any          `json:"options"`
	Field      *fieldConfig `json:"fieldConfig"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type gridPos struct{ H, W, X, Y int }

type fieldConfig struct {
	Defaults struct {
		Unit string `json:"unit"`
	} `json:"defaults"`
}

type target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *datasource `json:"datasource"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource *datasource     `json:"datasource"`
}

func loadDashboard(t testing.TB) *dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return &d
}

// allPanels returns the panels of d, those inside collapsed rows included.
func (d *dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// exprs returns every PromQL expression of d: its panels' targets and its
// query variables, by where they are.
func (d *dashboard) exprs() map[string]string {
	out := map[string]string{}
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out[p.Title+"/"+tg.RefID] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			out["$"+v.Name] = v.Definition
		}
	}
	return out
}

var (
	memkitName = regexp.MustCompile(`\bmemkit_[a-z_]+`)
	goName     = regexp.MustCompile(`\bgo_[a-z_]+`)
	fqName     = regexp.MustCompile(`fqName: "([^"]+)"`)
)

// describedNames returns the metric names c describes, with the series
// names of summaries and histograms (_sum, _count, _bucket) added.
func describedNames(t testing.TB, c prometheus.Collector) map[string]bool {
	t.Helper()
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	names := map[string]bool{}
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no fqName in %v", d)
		}
		names[m[1]] = true
	}
	return names
}

func seriesOf(names map[string]bool, series string) bool {
	if names[series] {
		return true
	}
	for _, suffix := range []string{"_count", "_sum", "_bucket"} {
		if base, ok := strings.CutSuffix(series, suffix); ok && names[base] {
			return true
		}
	}
	return false
}

func TestDashboard_QueriesOnlyEmittedMetrics(t *testing.T) {
	d := loadDashboard(t)
	memkitNames := describedNames(t, prom.New(prom.WithClasses()))
	goNames := describedNames(t, collectors.NewGoCollector())
	if len(memkitNames) != 20 {
		t.Errorf("the collector describes %d metrics, want 20", len(memkitNames))
	}

	used := map[string]bool{}
	exprs := d.exprs()
	if len(exprs) == 0 {
		t.Fatal("no expressions in the dashboard")
	}
	for where, expr := range exprs {
		if strings.TrimSpace(expr) == "" {
			t.Errorf("%s: empty expression", where)
		}
		for _, name := range memkitName.FindAllString(expr, -1) {
			used[name] = true
			if !seriesOf(memkitNames, name) {
				t.Errorf("%s: %s is not a metric package prom emits (expr %q)", where, name, expr)
			}
		}
		for _, name := range goName.FindAllString(expr, -1) {
			used[name] = true
			if !seriesOf(goNames, name) {
				t.Errorf("%s: %s is not a metric collectors.NewGoCollector emits (expr %q)", where, name, expr)
			}
		}
	}
	// What the dashboard is for.
	for _, name := range []string{
		"memkit_in_use_bytes", "memkit_reserved_bytes",
		"memkit_allocs_total", "memkit_frees_total",
		"memkit_heap_fallbacks_total", "memkit_bad_frees_total",
		"memkit_class_in_use_bytes", "memkit_class_reserved_bytes",
		"go_gc_duration_seconds_count",
	} {
		if !used[name] {
			t.Errorf("the dashboard does not chart %s", name)
		}
	}
}

// TestDashboard_RatiosPerInstance checks that a panel dividing two
// aggregates, such as the fragmentation 1 - largest free / free, groups
// both by allocator and instance: summed over instances, the free bytes of
// one process would be divided into the largest piece of another.
func TestDashboard_RatiosPerInstance(t *testing.T) {
	byClause := regexp.MustCompile(`by \(([^)]*)\)`)
	ratios := 0
	for title, expr := range loadDashboard(t).exprs() {
		if !strings.Contains(expr, " / ") || !byClause.MatchString(expr) {
			continue
		}
		ratios++
		for _, m := range byClause.FindAllStringSubmatch(expr, -1) {
			if m[1] != "allocator, instance" {
				t.Errorf("%s: a ratio of aggregates grouped by (%s); want by (allocator, instance): %s", title, m[1], expr)
			}
		}
	}
	if ratios == 0 {
		t.Error("no panel divides aggregates; the fragmentation panel should")
	}
}

func TestDashboard_Model(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both must be set", d.UID, d.Title)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want at least 36 (Grafana 9+)", d.SchemaVersion)
	}

	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if ds := vars["DS_PROMETHEUS"]; ds.Type != "datasource" || string(ds.Query) != `"prometheus"` {
		t.Errorf("variable DS_PROMETHEUS = %+v, want a prometheus datasource variable", ds)
	}
	if a := vars["allocator"]; a.Type != "query" || a.Definition != "label_values(memkit_in_use_bytes, allocator)" {
		t.Errorf("variable allocator = %+v, want label_values(memkit_in_use_bytes, allocator)", a)
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${DS_PROMETHEUS}") {
			t.Errorf("variable %s: datasource %+v, want uid ${DS_PROMETHEUS}", v.Name, v.Datasource)
		}
	}

	ids := map[int]string{}
	for _, p := range d.allPanels() {
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or also used by %q", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.Title == "" || p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %d %q: needs a title and a gridPos within 24 columns, has %+v", p.ID, p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if !slices.Contains([]string{"timeseries", "bargauge", "stat", "gauge", "table"}, p.Type) {
			t.Errorf("panel %q: unexpected type %q", p.Title, p.Type)
		}
		if p.Datasource == nil || p.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("panel %q: datasource %+v, want uid ${DS_PROMETHEUS}", p.Title, p.Datasource)
		}
		if p.Field == nil || p.Field.Defaults.Unit == "" {
			t.Errorf("panel %q: no unit", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no targets", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: refId %q missing or repeated", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource == nil || tg.Datasource.UID != "${DS_PROMETHEUS}" {
				t.Errorf("panel %q/%s: datasource %+v, want uid ${DS_PROMETHEUS}", p.Title, tg.RefID, tg.Datasource)
			}
			// Every memkit selector honours the allocator variable.
			for _, m := range memkitName.FindAllStringIndex(tg.Expr, -1) {
				if !strings.HasPrefix(tg.Expr[m[1]:], `{allocator=~"$allocator"`) {
					t.Errorf("panel %q/%s: %s without {allocator=~\"$allocator\"...}", p.Title, tg.RefID, tg.Expr[m[0]:m[1]])
				}
			}
		}
	}
}

// Every panel that charts a figure an Elastic bytepool estimates (in use,
// live objects, allocs, frees) says it is an estimate and how to count
// exactly, as the help text does.
func TestDashboard_EstimatedFiguresSaySo(t *testing.T) {
	estimated := regexp.MustCompile(`memkit_(class_)?(in_use_bytes|live_objects|allocs_total|frees_total)\b`)
	var walk func([]panel)
	n := 0
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				if estimated.MatchString(tg.Expr) {
					n++
					if !strings.Contains(p.Desc, "estimates from a 1-in-64 sample") || !strings.Contains(p.Desc, "bytepool.WithExactStats") {
						t.Errorf("panel %q charts %s without saying it may be an estimate: %q", p.Title, tg.Expr, p.Desc)
					}
					break
				}
			}
		}
	}
	walk(loadDashboard(t).Panels)
	if n == 0 {
		t.Fatal("no panel charts an estimated figure")
	}
}
