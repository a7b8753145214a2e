package slab_test

import (
	"errors"
	"fmt"

	"github.com/memkit/memkit/slab"
)

// An arena whose slabs come from mmap, outside the Go heap, with an index
// of 8-byte Locs: the GC scans neither the records nor the index.
func ExampleWithOffHeap() {
	a, err := slab.NewShared(64, 1<<20, 1.25, nil, slab.WithOffHeap(), slab.WithIdleSlabs(0))
	if err != nil {
		panic(err)
	}
	index := map[uint64]slab.Loc{} // costs what a map[uint64]uint64 does
	for id := uint64(1); id <= 3; id++ {
		b, err := a.TryAlloc(100)
		if err != nil { // a failed mapping: ErrNoSpace, never a panic
			panic(err)
		}
		copy(b, fmt.Sprintf("record %d", id))
		index[id] = a.BufToLoc(b)
	}
	fmt.Println(string(a.LocToBuf(index[2])[:8]))
	for _, l := range index {
		a.LocDecRef(l) // the last chunk of a slab unmaps it
	}
	// Output: record 2
}

// A memory source that can fail: its error reaches TryAlloc as it is.
func ExampleWithMalloc() {
	region := make([]byte, 2<<10) // room for two 1 KiB slabs
	next := 0
	carve := func(size int) ([]byte, error) {
		if next+size > len(region) {
			return nil, fmt.Errorf("%w: the region is used up", slab.ErrNoSpace)
		}
		b := region[next : next+size : next+size]
		next += size
		return b, nil
	}
	a, err := slab.NewArena(1024, 1024, 2, nil, slab.WithMalloc(carve))
	if err != nil {
		panic(err)
	}
	for i := range 3 {
		_, err := a.TryAlloc(1000)
		fmt.Println(i, err, errors.Is(err, slab.ErrNoSpace))
	}
	// Output:
	// 0 <nil> false
	// 1 <nil> false
	// 2 memkit/slab: malloc returned no slab: the region is used up true
}
