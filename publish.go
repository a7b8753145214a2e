package memkit

import (
	"encoding/json"
	"expvar"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// registry holds the published allocators by name.
var registry struct {
	mu   sync.RWMutex
	srcs map[string]StatsSource
	// vars holds the expvar variables this package created, by name. An
	// expvar variable cannot be removed, so a name published again after
	// Unpublish reuses its variable.
	vars map[string]bool
}

// Publish makes src visible under name to every observer memkit offers, all
// of which show it under that same name:
//
//   - an [expvar] variable called name, whose value is src's [Stats] as a
//     JSON object, served with the rest of expvar at /debug/vars;
//   - the debug page and JSON of [Handler];
//   - exporters that walk the published allocators with [Do]: the
//     Prometheus collector prom.New of github.com/memkit/memkit/prom
//     exports every published allocator with the label allocator="name".
//
// Every read of the variable, the page or a scrape calls src.ReadStats, so
// the figures are live. ReadStats is then called from the goroutine that
// serves the read, while the allocator's users go on: every memkit
// allocator's ReadStats is safe for that, and a [StatsSource] of your own
// must be too (wrap an allocator that is not safe for concurrent use in a
// StatsSource that takes the lock its users hold).
// Publish panics, as expvar.Publish does, if name is empty, if src is nil,
// or if name is already published or is taken by another expvar variable:
// names are global to the process, so prefix them, as in "memkit.uploads".
//
// Publishing keeps src reachable; call [Unpublish] when the allocator's
// life ends.
func Publish(name string, src StatsSource) {
	if name == "" {
		panic("memkit: Publish with an empty name")
	}
	if src == nil {
		panic(fmt.Sprintf("memkit: Publish of %q with a nil StatsSource", name))
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.srcs[name]; dup {
		panic(fmt.Sprintf("memkit: Publish of %q: name already published", name))
	}
	if !registry.vars[name] {
		if expvar.Get(name) != nil {
			panic(fmt.Sprintf("memkit: Publish of %q: an expvar variable of that name exists", name))
		}
		expvar.Publish(name, statsVar(name))
		if registry.vars == nil {
			registry.vars = make(map[string]bool)
		}
		registry.vars[name] = true
	}
	if registry.srcs == nil {
		registry.srcs = make(map[string]StatsSource)
	}
	registry.srcs[name] = src
}

// Unpublish removes the allocator published under name and reports whether
// there was one. Its expvar variable stays (expvar cannot remove one) and
// reads as null until name is published again.
func Unpublish(name string) bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, ok := registry.srcs[name]; !ok {
		return false
	}
	delete(registry.srcs, name)
	return true
}

// Lookup returns the allocator published under name, or nil.
func Lookup(name string) StatsSource {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	return registry.srcs[name]
}

// Do calls f for each published allocator, in name order. The set is read
// once before the first call, so f may call Publish and Unpublish. Do is
// how exporters find the published allocators; f runs on the caller's
// goroutine, and may call src.ReadStats there (see [Publish]).
func Do(f func(name string, src StatsSource)) {
	registry.mu.RLock()
	names := slices.Sorted(maps.Keys(registry.srcs))
	srcs := make([]StatsSource, len(names))
	for i, n := range names {
		srcs[i] = registry.srcs[n]
	}
	registry.mu.RUnlock()
	for i := range names {
		f(names[i], srcs[i])
	}
}

// statsVar is the expvar variable of a published name: it reads the
// allocator published under that name now, or null.
type statsVar string

// String returns the stats as JSON, as the expvar.Var interface requires.
func (v statsVar) String() string {
	src := Lookup(string(v))
	if src == nil {
		return "null"
	}
	var s Stats
	src.ReadStats(&s)
	b, err := json.Marshal(&s)
	if err != nil { // Stats holds only integers; this cannot happen.
		panic("memkit: encoding stats: " + err.Error())
	}
	return string(b)
}
