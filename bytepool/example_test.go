package bytepool_test

import (
	"fmt"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/stats"
)

// The package-level functions use a default Elastic pool.
func Example() {
	buf := bytepool.Get(1500) // len 1500, cap rounded up to the 1536-byte class
	n := copy(buf, "hello, pool")
	fmt.Println(string(buf[:n]), len(buf), cap(buf))
	bytepool.Put(buf) // buf must not be used after this
	// Output: hello, pool 1500 1536
}

func ExampleNew() {
	p, err := bytepool.New(
		bytepool.WithMinSize(128),
		bytepool.WithMaxSize(64<<10),
		bytepool.WithClassesPerDoubling(8), // waste under 12.5%
	)
	if err != nil {
		panic(err)
	}
	b := p.Get(1000)
	fmt.Println(len(b), cap(b))
	p.Put(b)

	_, err = bytepool.New(bytepool.WithMaxSize(3000))
	fmt.Println(err)
	// Output:
	// 1000 1024
	// memkit/bytepool: MaxSize 3000 must be a power of two
}

// A Bounded pool never holds more than its budget; TryGet reports when it
// is used up instead of falling back to the heap.
func ExampleNew_bounded() {
	p, err := bytepool.New(
		bytepool.WithPolicy(bytepool.Bounded),
		bytepool.WithMaxSize(64<<10),
		bytepool.WithBudget(128<<10), // two 64 KiB slabs
	)
	if err != nil {
		panic(err)
	}
	a, ok1 := p.TryGet(64 << 10)
	b, ok2 := p.TryGet(64 << 10)
	_, ok3 := p.TryGet(64 << 10)
	fmt.Println(ok1, ok2, ok3)
	p.Put(a)
	p.Put(b)

	var s memkit.Stats
	p.ReadStats(&s)
	fmt.Println("reserved", stats.FormatBytes(s.ReservedBytes), "failures", s.Failures)
	// Output:
	// true true false
	// reserved 128KiB failures 1
}

// A Cache serves one goroutine's hot loop without touching shared state on
// most calls.
func ExamplePool_NewCache() {
	p, _ := bytepool.New(bytepool.WithExactStats())
	c := p.NewCache()
	defer c.Release() // give its buffers back when the goroutine is done

	for i := 0; i < 3; i++ {
		b := c.Get(4096)
		b[0] = byte(i)
		c.Put(b)
	}
	c.Release()
	var s memkit.Stats
	p.ReadStats(&s)
	fmt.Println("allocs", s.Allocs, "frees", s.Frees, "live", s.LiveObjects)
	// Output: allocs 3 frees 3 live 0
}

func ExamplePool_ReadStats() {
	p, _ := bytepool.New(bytepool.WithMaxSize(256), bytepool.WithClassesPerDoubling(1),
		bytepool.WithExactStats()) // count every call, not a sample

	b := p.Get(200)
	p.Put(p.Get(64))

	var s memkit.Stats
	p.ReadStats(&s) // reuse s: later calls do not allocate
	fmt.Print(s.String())
	p.Put(b)
	// Output:
	// in use 256B  reserved 320B  live 1  allocs 2  frees 1  fallbacks 0  failures 0  grows 2  releases 0  bad frees 0
	//      class       in use     reserved    live    idle      allocs       frees   grows  releases
	//        64B           0B          64B       0       1           1           1       1         0
	//       128B           0B           0B       0       0           0           0       0         0
	//       256B         256B         256B       1       0           1           0       1         0
}
