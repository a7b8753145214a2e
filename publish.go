package memkit

import (
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
}

// ExpvarName is the name of the one expvar variable [Publish] creates: a
// JSON object with a member per published name, whose value is that
// allocator's [Stats].
const ExpvarName = "memkit"

// publishExpvar publishes the variable ExpvarName once, at the first
// Publish, so that a program that publishes nothing shows no variable.
var publishExpvar = sync.OnceFunc(func() {
	if expvar.Get(ExpvarName) != nil {
		panic(fmt.Sprintf("memkit: Publish: an expvar variable %q exists, which memkit's would replace", ExpvarName))
	}
	expvar.Publish(ExpvarName, expvar.Func(expvarValue))
})

// Publish makes src visible under name to every observer memkit offers, all
// of which show it under that same name:
//
//   - the member name of the expvar variable "memkit" ([ExpvarName]), a
//     JSON object whose members are the published allocators' [Stats],
//     served with the rest of expvar at /debug/vars;
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
// Publish panics if name is empty, if src is nil, or if name is already
// published: names are global to the process, so prefix them, as in
// "memkit.uploads"; and, at the first Publish, if another expvar variable
// is called "memkit".
//
// Publishing keeps src reachable; call [Unpublish] when the allocator's
// life ends. Names are free to come and go (one per connection, say):
// [Unpublish] removes the name from every observer, /debug/vars included.
func Publish(name string, src StatsSource) {
	if name == "" {
		panic("memkit: Publish with an empty name")
	}
	if src == nil {
		panic(fmt.Sprintf("memkit: Publish of %q with a nil StatsSource", name))
	}
	publishExpvar()
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.srcs[name]; dup {
		panic(fmt.Sprintf("memkit: Publish of %q: name already published", name))
	}
	if registry.srcs == nil {
		registry.srcs = make(map[string]StatsSource)
	}
	registry.srcs[name] = src
}

// Unpublish removes the allocator published under name from every
// observer, the expvar variable's members included, and reports whether
// there was one.
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

// expvarValue is the value of the expvar variable: every published
// allocator's Stats, by name, read now. (encoding/json sorts the names.)
func expvarValue() any {
	out := make(map[string]*Stats)
	Do(func(name string, src StatsSource) {
		var s Stats
		src.ReadStats(&s)
		out[name] = &s
	})
	return out
}
