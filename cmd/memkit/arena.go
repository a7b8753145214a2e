package main

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/memkit/memkit/arena"
)

// This file is the typed-arena family: arena.Arena and arena.Typed against
// new(T) and, in builds with GOEXPERIMENT=arenas, Go's arena package
// (arena_arenas.go), on the workloads of issue 4. Each workload's "memkit"
// impl is arena.New on an Arena; "memkit-typed" is Typed.New.

// benchTreesDepth is the depth of the BinaryTrees workload: the whole
// binary-trees program per op, small enough for a quick run.
const benchTreesDepth = 14

// newBatch is how many objects ArenaNew allocates between Resets (or keeps
// live, for new): one op is one object, its share of the Reset included.
const newBatch = 1024

// Object types of ArenaNew: 16, 64 and 256 bytes on 64-bit platforms, with
// pointers (scanned by the GC) and without.
type (
	ptrObj16   struct{ _, _ *int }
	ptrObj64   struct{ _ [8]*int }
	ptrObj256  struct{ _ [32]*int }
	flatObj16  struct{ _, _ int64 }
	flatObj64  struct{ _ [8]int64 }
	flatObj256 struct{ _ [32]int64 }
)

// newWorkloads are the ArenaNew workloads, each with its runs per impl;
// arena_arenas.go adds the experiment's through experimentNew.
var newWorkloads = []struct {
	name string
	runs map[string]func(b *testing.B)
}{
	{"ArenaNew/ptr=yes/size=16B", newRuns[ptrObj16]()},
	{"ArenaNew/ptr=yes/size=64B", newRuns[ptrObj64]()},
	{"ArenaNew/ptr=yes/size=256B", newRuns[ptrObj256]()},
	{"ArenaNew/ptr=no/size=16B", newRuns[flatObj16]()},
	{"ArenaNew/ptr=no/size=64B", newRuns[flatObj64]()},
	{"ArenaNew/ptr=no/size=256B", newRuns[flatObj256]()},
}

// experimentNew holds, in builds with GOEXPERIMENT=arenas, the experiment's
// ArenaNew run per workload name.
var experimentNew = map[string]func(b *testing.B){}

func newRuns[T any]() map[string]func(b *testing.B) {
	return map[string]func(b *testing.B){
		"memkit":       arenaNew[T],
		"memkit-typed": typedNew[T],
		"new":          heapNew[T],
	}
}

func init() {
	for _, name := range allocNames() {
		impl := map[string]string{"gc": "gc", "arena": "memkit", "typed": "memkit-typed"}[name]
		if impl == "" {
			impl = name
		}
		register(bench{workload: "BinaryTrees/depth=" + strconv.Itoa(benchTreesDepth), impl: impl,
			run: func(b *testing.B) { benchTrees(b, treeAllocs[name]) }})
	}
	for _, w := range newWorkloads {
		for _, impl := range []string{"memkit", "memkit-typed", "new"} {
			register(bench{workload: w.name, impl: impl, run: w.runs[impl]})
		}
		if run := experimentNew[w.name]; run != nil {
			register(bench{workload: w.name, impl: "experiment", run: run})
		}
	}
}

// benchTrees is BinaryTrees: the whole program per op. It reports the GC
// cycles per op.
func benchTrees(b *testing.B, newAlloc func() treeAlloc) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gc0 := ms.NumGC
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		binaryTrees(benchTreesDepth, newAlloc)
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.NumGC-gc0)/float64(b.N), "gcs/op")
}

// arenaNew is ArenaNew on an Arena: New, with a Reset every newBatch.
func arenaNew[T any](b *testing.B) {
	a := arena.NewArena()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		arena.New[T](a)
		if i%newBatch == newBatch-1 {
			a.Reset()
		}
	}
}

// typedNew is ArenaNew on a Typed arena.
func typedNew[T any](b *testing.B) {
	t := arena.NewTyped[T]()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t.New()
		if i%newBatch == newBatch-1 {
			t.Reset()
		}
	}
}

// heapNew is ArenaNew with new(T), the last newBatch objects kept live,
// as an arena keeps its objects until Reset.
func heapNew[T any](b *testing.B) {
	keep := new([newBatch]*T)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		keep[i%newBatch] = new(T)
	}
	runtime.KeepAlive(keep)
}
