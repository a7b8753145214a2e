//go:build !memkitdebug

package slab_test

import (
	"fmt"
	"unsafe"

	"github.com/memkit/memkit/slab"
)

// This example prints the release build's panic; the checked build
// (-tags memkitdebug) panics with a *memkit.Misuse that adds the stacks of
// the allocation and the free.

// The seed's list of Locs: pointer-free handles to ten records, resolved
// and released later. A Loc kept after its chunk was freed is caught.
func ExampleArena_BufToLoc() {
	arena, _ := slab.NewArena(8, 1024, 2, nil)
	locs := make([]slab.Loc, 10)
	for i := range locs {
		buf := arena.Alloc(int(unsafe.Sizeof(Data{})))
		d := slab.View[Data](buf)
		slab.SetString(d.Name[:], fmt.Sprintf("Name%d", i))
		d.Age = int64(i)
		locs[i] = arena.BufToLoc(buf)
	}
	for _, loc := range locs[:3] {
		d := slab.View[Data](arena.LocToBuf(loc))
		fmt.Println(slab.GetString(d.Name[:]), d.Age)
	}
	for _, loc := range locs {
		arena.LocDecRef(loc)
	}
	defer func() { fmt.Println(recover()) }()
	arena.LocToBuf(locs[0])
	// Output:
	// Name0 0
	// Name1 1
	// Name2 2
	// memkit/slab: stale handle
}
