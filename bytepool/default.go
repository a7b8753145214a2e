package bytepool

import "github.com/memkit/memkit/stats"

// defaultPool serves the package-level functions: an Elastic pool with the
// default options.
var defaultPool = func() *Pool {
	p, err := New()
	if err != nil {
		panic(err) // the defaults are valid; a test checks it
	}
	return p
}()

// Default returns the pool behind the package-level [Get] and [Put].
func Default() *Pool { return defaultPool }

// Get returns a buffer of length n from the default pool; see [Pool.Get].
func Get(n int) []byte { return defaultPool.Get(n) }

// Put returns b to the default pool; see [Pool.Put].
func Put(b []byte) { defaultPool.Put(b) }

// ReadStats reads the default pool's statistics; see [Pool.ReadStats].
func ReadStats(s *stats.Stats) { defaultPool.ReadStats(s) }
