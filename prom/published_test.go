package prom_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// publish publishes src as name for the rest of the test.
func publish(t *testing.T, name string, src memkit.StatsSource) {
	t.Helper()
	memkit.Publish(name, src)
	t.Cleanup(func() { memkit.Unpublish(name) })
}

// allocatorLabels gathers reg and returns, per metric name, the sorted
// values of the allocator label of its series.
func allocatorLabels(t *testing.T, reg prometheus.Gatherer) map[string][]string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string][]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "allocator" && !slices.Contains(out[mf.GetName()], l.GetValue()) {
					out[mf.GetName()] = append(out[mf.GetName()], l.GetValue())
				}
			}
		}
		slices.Sort(out[mf.GetName()])
	}
	return out
}

// TestNew_ExportsEveryPublishedAllocatorUnderItsName checks the one
// registry: New exports what memkit.Publish holds, under the names the
// debug page shows, and follows Publish and Unpublish between scrapes.
func TestNew_ExportsEveryPublishedAllocatorUnderItsName(t *testing.T) {
	publish(t, "memkit.test.uploads", newFakeSource(2))
	publish(t, "memkit.test.sessions", newFakeSource(1))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.New())

	// The names the debug page shows, from its JSON.
	rec := httptest.NewRecorder()
	memkit.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/debug/memkit/?format=json", nil))
	var page map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	var pageNames []string
	for name := range page {
		pageNames = append(pageNames, name)
	}
	slices.Sort(pageNames)

	got := allocatorLabels(t, reg)
	if want := []string{"memkit.test.sessions", "memkit.test.uploads"}; !slices.Equal(pageNames, want) {
		t.Fatalf("debug page lists %q; want %q", pageNames, want)
	}
	if !slices.Equal(got["memkit_allocs_total"], pageNames) {
		t.Errorf("memkit_allocs_total allocators %q; the debug page shows %q", got["memkit_allocs_total"], pageNames)
	}
	if n := len(got["memkit_class_allocs_total"]); n != 0 {
		t.Errorf("per-class series without WithClasses: %q", got["memkit_class_allocs_total"])
	}

	memkit.Unpublish("memkit.test.sessions")
	publish(t, "memkit.test.late", newFakeSource(1))
	got = allocatorLabels(t, reg)
	if want := []string{"memkit.test.late", "memkit.test.uploads"}; !slices.Equal(got["memkit_in_use_bytes"], want) {
		t.Errorf("after Unpublish and a late Publish: allocators %q; want %q", got["memkit_in_use_bytes"], want)
	}
}

// TestNew_SameSeriesAsNewCollector checks that New with WithClasses, with
// one allocator published as "fake", exports exactly the golden series of
// NewCollector("fake", ...): the two name their series alike.
func TestNew_SameSeriesAsNewCollector(t *testing.T) {
	for _, tc := range []struct {
		golden string
		opts   []prom.Option
	}{
		{"fake", []prom.Option{prom.WithClasses()}},
		{"fake_without_classes", nil},
		{"fake_const_labels", []prom.Option{prom.WithClasses(), prom.WithConstLabels(prometheus.Labels{"tenant": "a"})}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			classes := 2
			if tc.golden == "fake_const_labels" {
				classes = 1
			}
			memkit.Publish("fake", newFakeSource(classes))
			defer memkit.Unpublish("fake")
			f, err := os.Open(filepath.Join("testdata", tc.golden+".prom"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := testutil.CollectAndCompare(prom.New(tc.opts...), f); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNew_InvalidOptionsFailRegistration(t *testing.T) {
	for label, want := range map[string]string{
		"allocator":  `memkit/prom: WithConstLabels: label "allocator" is reserved`,
		"class":      `memkit/prom: WithConstLabels: label "class" is reserved`,
		"__reserved": `memkit/prom: "__reserved" is not a valid label name`,
	} {
		err := prometheus.NewRegistry().Register(prom.New(prom.WithConstLabels(prometheus.Labels{label: "x"})))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("const label %q: %v; want an error containing %q", label, err, want)
		}
	}
}

// TestNew_SkipsNamesThatAreNotLabelValues checks that a published name that
// is not valid UTF-8 leaves out that allocator, not the whole scrape.
func TestNew_SkipsNamesThatAreNotLabelValues(t *testing.T) {
	publish(t, "memkit.test.ok", newFakeSource(1))
	publish(t, "memkit.test.\xff", newFakeSource(1))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.New())
	if got := allocatorLabels(t, reg)["memkit_allocs_total"]; !slices.Equal(got, []string{"memkit.test.ok"}) {
		t.Errorf("allocators %q; want only memkit.test.ok", got)
	}
}
