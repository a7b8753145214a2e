package memkit_test

import (
	"encoding/json"
	"expvar"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/e2e"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/stats"
)

// fakeSource reports a fixed snapshot.
type fakeSource struct{ s memkit.Stats }

func (f *fakeSource) ReadStats(s *memkit.Stats) {
	classes := append(s.Classes[:0], f.s.Classes...)
	*s = f.s
	s.Classes = classes
}

func threeClasses() *fakeSource {
	return &fakeSource{memkit.Stats{
		InUseBytes: 4096 + 3*1024, ReservedBytes: 16384, LiveObjects: 4, Allocs: 10, Frees: 6, BadFrees: 1,
		Classes: []memkit.ClassStats{
			{Size: 512, ReservedBytes: 2048, IdleObjects: 4, Allocs: 2, Frees: 2},
			{Size: 1024, InUseBytes: 3072, ReservedBytes: 4096, LiveObjects: 3, IdleObjects: 1, Allocs: 5, Frees: 2},
			{Size: 4096, InUseBytes: 4096, ReservedBytes: 10240, LiveObjects: 1, Allocs: 3, Frees: 2},
		},
	}}
}

// expvarStats returns the member name of the expvar variable "memkit", as
// /debug/vars shows it, and whether there is one.
func expvarStats(t *testing.T, name string) (memkit.Stats, bool) {
	t.Helper()
	v := expvar.Get(memkit.ExpvarName)
	if v == nil {
		t.Fatal("no expvar variable memkit after Publish")
	}
	var all map[string]memkit.Stats
	if err := json.Unmarshal([]byte(v.String()), &all); err != nil {
		t.Fatalf("expvar value %s: %v", v.String(), err)
	}
	s, ok := all[name]
	return s, ok
}

func TestPublish_ExpvarReadsLiveStats(t *testing.T) {
	src := threeClasses()
	memkit.Publish("memkit.test.expvar", src)
	t.Cleanup(func() { memkit.Unpublish("memkit.test.expvar") })

	if got, ok := expvarStats(t, "memkit.test.expvar"); !ok || !reflect.DeepEqual(got, src.s) {
		t.Fatalf("expvar value %+v (%v); want %+v", got, ok, src.s)
	}
	src.s.Allocs = 11 // live: the next read sees it
	if got, _ := expvarStats(t, "memkit.test.expvar"); got.Allocs != 11 {
		t.Fatalf("after a change: %+v", got)
	}

	if !memkit.Unpublish("memkit.test.expvar") {
		t.Fatal("Unpublish of a published name returned false")
	}
	if memkit.Unpublish("memkit.test.expvar") {
		t.Fatal("second Unpublish returned true")
	}
	if _, ok := expvarStats(t, "memkit.test.expvar"); ok {
		t.Fatal("an unpublished name is still in the expvar variable")
	}
	memkit.Publish("memkit.test.expvar", src) // the name can be used again
	if memkit.Lookup("memkit.test.expvar") != src {
		t.Fatal("Lookup after republishing")
	}
}

// Names published and unpublished, one per connection say, leave nothing
// behind: /debug/vars lists none of 1000 of them afterwards, and expvar
// holds no more variables than before (expvar cannot remove one, so memkit
// keeps a single variable over its registry).
func TestUnpublish_LeavesNothingInDebugVars(t *testing.T) {
	memkit.Publish("memkit.test.conn.warm", threeClasses())
	memkit.Unpublish("memkit.test.conn.warm")
	vars := func() int {
		n := 0
		expvar.Do(func(expvar.KeyValue) { n++ })
		return n
	}
	before := vars()
	for i := range 1000 {
		name := fmt.Sprintf("memkit.test.conn.%d", i)
		memkit.Publish(name, threeClasses())
		memkit.Unpublish(name)
	}
	if after := vars(); after != before {
		t.Fatalf("expvar holds %d variables after 1000 Publish+Unpublish; %d before", after, before)
	}
	rec := httptest.NewRecorder()
	expvar.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/debug/vars", nil))
	if body := rec.Body.String(); strings.Contains(body, "memkit.test.conn.") {
		t.Fatalf("/debug/vars still lists unpublished names: %.300s", body[strings.Index(body, "memkit.test.conn."):])
	}
}

func TestPublish_Panics(t *testing.T) {
	memkit.Publish("memkit.test.dup", threeClasses())
	t.Cleanup(func() { memkit.Unpublish("memkit.test.dup") })
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"empty", func() { memkit.Publish("", threeClasses()) }, "memkit: Publish with an empty name"},
		{"nil", func() { memkit.Publish("memkit.test.nil", nil) }, `memkit: Publish of "memkit.test.nil" with a nil StatsSource`},
		{"dup", func() { memkit.Publish("memkit.test.dup", threeClasses()) }, `memkit: Publish of "memkit.test.dup": name already published`},
	} {
		t.Run(tc.name, func(t *testing.T) { memtest.CheckPanic(t, tc.want, tc.f) })
	}
	if memkit.Lookup("memkit.test.nil") != nil {
		t.Fatal("a Publish that panicked left the name published")
	}
}

func TestDo_NameOrder(t *testing.T) {
	for _, n := range []string{"memkit.test.order.c", "memkit.test.order.a", "memkit.test.order.b"} {
		memkit.Publish(n, threeClasses())
		t.Cleanup(func() { memkit.Unpublish(n) })
	}
	var got []string
	memkit.Do(func(name string, _ memkit.StatsSource) {
		if strings.HasPrefix(name, "memkit.test.order.") {
			got = append(got, name)
		}
	})
	want := []string{"memkit.test.order.a", "memkit.test.order.b", "memkit.test.order.c"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Do visited %v; want %v", got, want)
	}
}

// debugServer publishes src as name and serves the debug page.
func debugServer(t *testing.T, name string, src memkit.StatsSource) *httptest.Server {
	t.Helper()
	memkit.Publish(name, src)
	t.Cleanup(func() { memkit.Unpublish(name) })
	mux := http.NewServeMux()
	mux.Handle("/debug/memkit/", memkit.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestHandler_HTMLRowPerClass(t *testing.T) {
	src := threeClasses()
	srv := debugServer(t, "memkit.test.page", src)
	code, body := get(t, srv.URL+"/debug/memkit/?name=memkit.test.page")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	if n := strings.Count(body, `class="class-row"`); n != 3 {
		t.Fatalf("%d class rows; want 3\n%s", n, body)
	}
	for _, want := range []string{
		"<h2>memkit.test.page</h2>",
		`<meta http-equiv="refresh" content="2">`,
		`data-size="1024"`,
		// The largest reserved class (10 KiB) gets the full 240-pixel bar,
		// 4 KiB in use of it 96 pixels.
		`<rect class="track" x="0" y="0" width="240" height="12"/><rect class="reserved" x="0" y="0" width="240" height="12"/><rect class="inuse" x="0" y="0" width="96" height="12"/>`,
		`<td class="bad">1</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, "http://") || strings.Contains(body, "https://") || strings.Contains(body, "<script") {
		t.Error("page references an external asset or a script")
	}

	_, body = get(t, srv.URL+"/debug/memkit/?name=memkit.test.page&refresh=0")
	if strings.Contains(body, `http-equiv="refresh"`) {
		t.Error("refresh=0 still reloads")
	}
	if code, _ := get(t, srv.URL+"/debug/memkit/?refresh=soon"); code != http.StatusBadRequest {
		t.Errorf("refresh=soon: status %d; want 400", code)
	}
	if code, body := get(t, srv.URL+"/debug/memkit/?name=nope"); code != http.StatusNotFound ||
		!strings.Contains(body, `no allocator is published as "nope"`) {
		t.Errorf("unknown name: %d %q", code, body)
	}
}

// TestHandler_HidesEmptyClasses checks that the page hides the size classes
// whose every figure is zero, says how many, and links to the page with
// every class, keeping the other parameters; and back.
func TestHandler_HidesEmptyClasses(t *testing.T) {
	src := threeClasses()
	src.s.Classes = append(src.s.Classes, memkit.ClassStats{Size: 8192}, memkit.ClassStats{Size: 16384})
	srv := debugServer(t, "memkit.test.empty", src)
	_, body := get(t, srv.URL+"/debug/memkit/?name=memkit.test.empty&refresh=0")
	if n := strings.Count(body, `class="class-row"`); n != 3 {
		t.Errorf("%d class rows by default; want the 3 in use\n%s", n, body)
	}
	if strings.Contains(body, `data-size="8192"`) {
		t.Error("an empty class is shown by default")
	}
	link := `2 empty size classes hidden: <a href="?classes=all&amp;name=memkit.test.empty&amp;refresh=0">show every class</a>`
	if !strings.Contains(body, link) {
		t.Errorf("page lacks %s\n%s", link, body)
	}
	_, body = get(t, srv.URL+"/debug/memkit/?name=memkit.test.empty&refresh=0&classes=all")
	if n := strings.Count(body, `class="class-row"`); n != 5 {
		t.Errorf("%d class rows with classes=all; want 5", n)
	}
	if back := `<a href="?name=memkit.test.empty&amp;refresh=0">hide the empty size classes</a>`; !strings.Contains(body, back) || strings.Contains(body, "hidden:") {
		t.Errorf("classes=all page lacks %s, or still hides classes\n%s", back, body)
	}
	// Every class empty: the table goes, the count and the link stay.
	srv = debugServer(t, "memkit.test.allempty", &fakeSource{memkit.Stats{Classes: []memkit.ClassStats{{Size: 64}}}})
	_, body = get(t, srv.URL+"/debug/memkit/?name=memkit.test.allempty")
	if strings.Contains(body, `class="classes"`) || !strings.Contains(body, "1 empty size class hidden: ") {
		t.Errorf("an allocator with only empty classes:\n%s", body)
	}
	// The JSON keeps every class.
	_, body = get(t, srv.URL+"/debug/memkit/?name=memkit.test.empty&format=json")
	if !strings.Contains(body, `"Size": 16384`) {
		t.Errorf("JSON lacks an empty class:\n%s", body)
	}
}

// A range allocator's free memory gets a line of its own; a pool's, which
// has none, does not.
func TestHandler_HTMLFreeMemory(t *testing.T) {
	ranges := &fakeSource{memkit.Stats{InUseBytes: 8192, ReservedBytes: 16384, FreeBytes: 8192, LargestFree: 2048}}
	srv := debugServer(t, "memkit.test.ranges", ranges)
	_, body := get(t, srv.URL+"/debug/memkit/?name=memkit.test.ranges")
	if want := `<p class="free">free 8KiB, largest free piece 2KiB, fragmentation 0.75</p>`; !strings.Contains(body, want) {
		t.Errorf("page lacks %s\n%s", want, body)
	}
	pool := debugServer(t, "memkit.test.pool", threeClasses())
	if _, body := get(t, pool.URL+"/debug/memkit/?name=memkit.test.pool"); strings.Contains(body, `class="free"`) {
		t.Errorf("a pool's page has a free-memory line\n%s", body)
	}
}

// An Elastic bytepool's sampled figures read as estimates on the page (a
// "≈" before each, and a note that says how to count exactly), and in its
// JSON; a pool built WithExactStats shows plain counts. The page had
// shown "allocs 0, grows 72" as if counted.
func TestHandler_MarksEstimates(t *testing.T) {
	sampled, err := bytepool.New()
	if err != nil {
		t.Fatal(err)
	}
	exact, err := bytepool.New(bytepool.WithExactStats())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*bytepool.Pool{sampled, exact} {
		p.Put(p.Get(1000))
	}
	srv := debugServer(t, "memkit.test.sampled", sampled)
	debugServer(t, "memkit.test.exact", exact)
	_, body := get(t, srv.URL+"/debug/memkit/?name=memkit.test.sampled")
	for _, want := range []string{
		`<p class="estimate">≈ estimate: in use, live objects, allocs and frees`,
		"bytepool.WithExactStats()",
		"<td>≈ ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the sampled pool's page lacks %q\n%s", want, body)
		}
	}
	if _, body := get(t, srv.URL+"/debug/memkit/?name=memkit.test.exact"); strings.Contains(body, `class="estimate"`) || strings.Contains(body, "≈") {
		t.Errorf("the exact pool's page shows an estimate\n%s", body)
	}
	_, body = get(t, srv.URL+"/debug/memkit/?format=json")
	var got map[string]memkit.Stats
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if !got["memkit.test.sampled"].Estimated || got["memkit.test.exact"].Estimated {
		t.Fatalf("JSON Estimated: sampled %v, exact %v; want true, false",
			got["memkit.test.sampled"].Estimated, got["memkit.test.exact"].Estimated)
	}
}

func TestHandler_JSON(t *testing.T) {
	src := threeClasses()
	src.s.FreeBytes, src.s.LargestFree = 1000, 600 // reported like any field
	srv := debugServer(t, "memkit.test.json", src)
	code, body := get(t, srv.URL+"/debug/memkit/?format=json&name=memkit.test.json")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	var got map[string]memkit.Stats
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if len(got) != 1 || !reflect.DeepEqual(got["memkit.test.json"], src.s) {
		t.Fatalf("JSON %+v; want only memkit.test.json = %+v", got, src.s)
	}
}

// TestHandler_Chromium renders the page of a real pool in headless Chromium
// and checks what a person would see: a non-blank page, and in the DOM the
// browser built, one row per size class.
func TestHandler_Chromium(t *testing.T) {
	e2e.Chromium(t)
	p, err := bytepool.New(bytepool.WithMaxSize(64 << 10))
	if err != nil {
		t.Fatal(err)
	}
	var held [][]byte
	for _, n := range []int{100, 1000, 1000, 5000, 20000, 60000} {
		held = append(held, p.Get(n))
	}
	p.Put(held[0])
	var s memkit.Stats
	p.ReadStats(&s)
	srv := debugServer(t, "memkit.test.chromium", p)
	url := srv.URL + "/debug/memkit/?refresh=0&name=memkit.test.chromium"

	used := 0 // classes with a non-zero figure: the page shows these
	for _, c := range s.Classes {
		if c != (memkit.ClassStats{Size: c.Size}) {
			used++
		}
	}
	dom := e2e.DumpDOM(t, url)
	if n := strings.Count(dom, `class="class-row"`); n != used || used == 0 || used == len(s.Classes) {
		t.Fatalf("DOM has %d class rows; want %d (one per class in use, of %d)", n, used, len(s.Classes))
	}
	if !strings.Contains(dom, "<svg") {
		t.Fatal("DOM has no SVG bars")
	}
	img := e2e.Screenshot(t, url, 1000, 800)
	ink, colours := e2e.Ink(img)
	if ink < 0.02 || colours < 4 {
		t.Fatalf("screenshot looks blank: %.3f of pixels inked, %d colours", ink, colours)
	}
	for _, b := range held[1:] {
		p.Put(b)
	}
}

// Publish an allocator and serve its stats: as a member of the expvar
// variable "memkit" at /debug/vars and on memkit's debug page.
func ExamplePublish() {
	pool, err := bytepool.New(bytepool.WithExactStats()) // exact counts, for the output below
	if err != nil {
		panic(err)
	}
	memkit.Publish("memkit.example.uploads", pool)
	defer memkit.Unpublish("memkit.example.uploads")

	buf := pool.Get(1000)
	var all map[string]memkit.Stats // what /debug/vars shows as "memkit"
	json.Unmarshal([]byte(expvar.Get(memkit.ExpvarName).String()), &all)
	s := all["memkit.example.uploads"]
	fmt.Println("live objects:", s.LiveObjects, "in use:", stats.FormatBytes(s.InUseBytes))
	pool.Put(buf)

	// In a server: http.Handle("/debug/memkit/", memkit.Handler())

	// Output: live objects: 1 in use: 1KiB
}
