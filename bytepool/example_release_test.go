//go:build !memkitdebug

package bytepool_test

import (
	"fmt"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
)

// Put drops and counts what the pool did not hand out; it never files a
// buffer into a class it does not fit. (The checked build, -tags
// memkitdebug, panics instead, naming where the buffer was allocated.)
func ExamplePool_Put() {
	p, _ := bytepool.New(bytepool.WithExactStats())
	b := p.Get(100)
	p.Put(b[1:]) // start moved: capacity 111 is no class
	p.Put(b)

	var s memkit.Stats
	p.ReadStats(&s)
	fmt.Println("frees", s.Frees, "bad frees", s.BadFrees)
	// Output: frees 1 bad frees 1
}
