//go:build goexperiment.arenas

package main

import (
	"arena"
	"testing"
)

// This file adds the experiment's impls to the ArenaNew workloads in builds
// with GOEXPERIMENT=arenas: arena.New of Go's arena package, with a Free
// and a new arena every newBatch objects, its only way to reuse memory.
// (BinaryTrees gets its experiment impl from binarytrees_arenas.go.)

var _ = addExperimentNew()

func addExperimentNew() bool {
	experimentNew["ArenaNew/ptr=yes/size=16B"] = experimentNewRun[ptrObj16]
	experimentNew["ArenaNew/ptr=yes/size=64B"] = experimentNewRun[ptrObj64]
	experimentNew["ArenaNew/ptr=yes/size=256B"] = experimentNewRun[ptrObj256]
	experimentNew["ArenaNew/ptr=no/size=16B"] = experimentNewRun[flatObj16]
	experimentNew["ArenaNew/ptr=no/size=64B"] = experimentNewRun[flatObj64]
	experimentNew["ArenaNew/ptr=no/size=256B"] = experimentNewRun[flatObj256]
	return true
}

func experimentNewRun[T any](b *testing.B) {
	a := arena.NewArena()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		arena.New[T](a)
		if i%newBatch == newBatch-1 {
			a.Free()
			a = arena.NewArena()
		}
	}
	a.Free()
}
