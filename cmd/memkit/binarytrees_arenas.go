//go:build goexperiment.arenas

package main

import "arena"

// This file adds -alloc experiment to memkit binarytrees in builds with
// GOEXPERIMENT=arenas: Go's arena package, used as in the seed's program,
// with a new arena per tree, freed after it is counted.

// A variable's initializer, not an init function, so that the entry is
// there when arena.go's init registers the BinaryTrees benches.
var _ = addExperimentTrees()

func addExperimentTrees() bool {
	treeAllocs["experiment"] = func() treeAlloc { return &experimentTrees{} }
	return true
}

type experimentTrees struct{ a *arena.Arena }

func (t *experimentTrees) tree(depth int) *treeNode {
	if t.a == nil {
		t.a = arena.NewArena()
	}
	return experimentTree(t.a, depth)
}

func (t *experimentTrees) reset() {
	if t.a != nil {
		t.a.Free()
		t.a = nil
	}
}

func (t *experimentTrees) free() { t.reset() }

func experimentTree(a *arena.Arena, depth int) *treeNode {
	n := arena.New[treeNode](a)
	if depth > 0 {
		n.left = experimentTree(a, depth-1)
		n.right = experimentTree(a, depth-1)
	}
	return n
}
