package memkit

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/memkit/memkit/stats"
)

// Handler returns the debug page of the published allocators, in the manner
// of net/http/pprof. Mount it under a path of your choice; the usual one is
//
//	http.Handle("/debug/memkit/", memkit.Handler())
//
// The page lists every allocator given to [Publish], under its published
// name (the name expvar and the Prometheus collector prom.New use too),
// with its gauges and counters, and a table with a bar per size class: the
// bar's length is the class's reserved bytes relative to the allocator's
// largest class, its dark part the bytes in use. Size classes whose every
// figure is zero are hidden, with a link that shows them. It is one HTML
// document with inline SVG and CSS, no script and no external asset, so it
// works on an air-gapped host, and it reloads itself every 2 seconds.
//
// Query parameters:
//
//	format=json   the snapshots as one JSON object, name → Stats (every class)
//	name=N        only the allocator published as N (404 if there is none)
//	refresh=S     reload every S seconds; 0 turns reloading off
//	classes=all   also list the size classes whose figures are all zero
//
// Each request calls every shown allocator's ReadStats on the goroutine
// serving it, while the allocators' users go on (see [Publish]).
//
// Like pprof's handlers, the page shows internal state: serve it on an
// address only operators reach.
func Handler() http.Handler { return http.HandlerFunc(serveDebug) }

// debugAllocator is one allocator's section of the debug page.
type debugAllocator struct {
	Name    string
	Stats   Stats
	Classes []debugClass // the classes shown
	Hidden  int          // classes not shown: every figure zero
}

// debugClass is one size class row, with its bar pre-scaled to barWidth.
type debugClass struct {
	ClassStats
	ReservedWidth, InUseWidth int
}

const barWidth = 240

func serveDebug(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var allocs []debugAllocator
	Do(func(name string, src StatsSource) {
		if n := q.Get("name"); n != "" && n != name {
			return
		}
		a := debugAllocator{Name: name}
		src.ReadStats(&a.Stats)
		allocs = append(allocs, a)
	})
	if n := q.Get("name"); n != "" && len(allocs) == 0 {
		http.Error(w, "memkit: no allocator is published as "+strconv.Quote(n), http.StatusNotFound)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if q.Get("format") == "json" {
		out := make(map[string]*Stats, len(allocs))
		for i := range allocs {
			out[allocs[i].Name] = &allocs[i].Stats
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out) // an error means the client went away
		return
	}
	refresh := 2
	if s := q.Get("refresh"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			http.Error(w, "memkit: refresh must be a whole number of seconds, 0 for none", http.StatusBadRequest)
			return
		}
		refresh = n
	}
	all := q.Get("classes") == "all"
	for i := range allocs {
		a := &allocs[i]
		a.Classes = scaleClasses(a.Stats.Classes)
		if !all {
			n := len(a.Classes)
			a.Classes = slices.DeleteFunc(a.Classes, func(c debugClass) bool { return c.ClassStats == ClassStats{Size: c.Size} })
			a.Hidden = n - len(a.Classes)
		}
	}
	// The link that toggles the empty classes keeps the other parameters.
	toggle := maps.Clone(q)
	if all {
		toggle.Del("classes")
	} else {
		toggle.Set("classes", "all")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// An error from Execute means the client went away.
	_ = debugPage.Execute(w, struct {
		Refresh    int
		Allocators []debugAllocator
		AllClasses bool
		Toggle     string
	}{refresh, allocs, all, "?" + toggle.Encode()})
}

// scaleClasses sizes each class's bars against the largest reserved class.
func scaleClasses(cs []ClassStats) []debugClass {
	var max uint64
	for _, c := range cs {
		max = maxU(max, maxU(c.ReservedBytes, c.InUseBytes))
	}
	out := make([]debugClass, len(cs))
	for i, c := range cs {
		out[i].ClassStats = c
		if max > 0 {
			out[i].ReservedWidth = scaled(c.ReservedBytes, max)
			out[i].InUseWidth = scaled(c.InUseBytes, max)
		}
	}
	return out
}

// scaled maps v in [0, max] to [0, barWidth], giving any non-zero v at least
// one pixel so that a small class is visibly non-empty.
func scaled(v, max uint64) int {
	if v == 0 {
		return 0
	}
	return max1(int(float64(v) / float64(max) * barWidth))
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

//go:embed handler.html
var debugHTML string

var debugPage = template.Must(template.New("memkit").Funcs(template.FuncMap{
	"bytes": stats.FormatBytes,
}).Parse(debugHTML))
