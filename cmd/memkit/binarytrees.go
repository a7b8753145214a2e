package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memkit/memkit/arena"
)

// This file is memkit binarytrees: the benchmark game's binary-trees
// program, as in the seed (../shared/seeds/002), with its allocation
// swapped by -alloc: new (gc), an arena.Arena (arena), an arena.Typed
// (typed), or, in builds with GOEXPERIMENT=arenas, Go's arena package
// (experiment, binarytrees_arenas.go). Every variant keeps the seed's
// structure: one goroutine per tree depth, all at once, a stretch tree, a
// long-lived tree; every variant prints the same text.

const binaryTreesUsage = `usage: memkit binarytrees [-alloc gc|arena|typed] [-v] N

Runs the benchmark game's binary-trees program at depth N (at least 6) and
prints its output. -alloc chooses how the nodes are allocated:

  gc          new(Node), the reference program
  arena       arena.New[Node] in an arena.Arena per goroutine, Reset after each tree
  typed       arena.Typed[Node].New, Reset after each tree
  experiment  Go's arena package, a new arena per tree, as in the seed (only
              in builds with GOEXPERIMENT=arenas)

flags:
`

// treeNode is the program's node.
type treeNode struct {
	left, right *treeNode
}

// check counts the nodes of the complete tree at t.
func (t *treeNode) check() int {
	if t.left == nil {
		return 1
	}
	return 1 + t.left.check() + t.right.check()
}

// treeAlloc builds trees for one goroutine.
type treeAlloc interface {
	// tree returns a complete binary tree of the depth.
	tree(depth int) *treeNode
	// reset frees the trees built since the last reset (or does nothing).
	reset()
	// free frees them and the allocator.
	free()
}

// treeAllocs are the -alloc choices, each making one goroutine's
// allocator. binarytrees_arenas.go adds "experiment".
var treeAllocs = map[string]func() treeAlloc{
	"gc":    func() treeAlloc { return gcTrees{} },
	"arena": func() treeAlloc { return &arenaTrees{arena.NewArena()} },
	"typed": func() treeAlloc { return &typedTrees{arena.NewTyped[treeNode]()} },
}

// allocNames lists treeAllocs in a fixed order: the built-in ones first.
func allocNames() []string {
	names := []string{"gc", "arena", "typed"}
	for name := range treeAllocs {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

type gcTrees struct{}

func (gcTrees) tree(depth int) *treeNode { return gcTree(depth) }
func (gcTrees) reset()                   {}
func (gcTrees) free()                    {}

func gcTree(depth int) *treeNode {
	if depth > 0 {
		return &treeNode{left: gcTree(depth - 1), right: gcTree(depth - 1)}
	}
	return &treeNode{}
}

type arenaTrees struct{ a *arena.Arena }

func (t *arenaTrees) tree(depth int) *treeNode { return arenaTree(t.a, depth) }
func (t *arenaTrees) reset()                   { t.a.Reset() }
func (t *arenaTrees) free()                    { t.a.Free() }

func arenaTree(a *arena.Arena, depth int) *treeNode {
	n := arena.New[treeNode](a)
	if depth > 0 {
		n.left = arenaTree(a, depth-1)
		n.right = arenaTree(a, depth-1)
	}
	return n
}

type typedTrees struct{ t *arena.Typed[treeNode] }

func (t *typedTrees) tree(depth int) *treeNode { return typedTree(t.t, depth) }
func (t *typedTrees) reset()                   { t.t.Reset() }
func (t *typedTrees) free()                    { t.t.Free() }

func typedTree(t *arena.Typed[treeNode], depth int) *treeNode {
	n := t.New()
	if depth > 0 {
		n.left = typedTree(t, depth-1)
		n.right = typedTree(t, depth-1)
	}
	return n
}

// minDepth is the program's smallest tree depth.
const minDepth = 4

// binaryTrees runs the program at depth n with the allocator newAlloc makes
// per goroutine, and returns its output lines.
func binaryTrees(n int, newAlloc func() treeAlloc) []string {
	maxDepth := max(n, minDepth+2)
	out := make([]string, 3+(maxDepth-minDepth)/2)
	var wg sync.WaitGroup

	// The stretch tree, of depth maxDepth+1, is built, counted and freed.
	wg.Add(1)
	go func() {
		defer wg.Done()
		al := newAlloc()
		out[0] = fmt.Sprintf("stretch tree of depth %d\t check: %d", maxDepth+1, al.tree(maxDepth+1).check())
		al.free()
	}()

	// The long-lived tree lives until the end.
	long := newAlloc()
	var longTree *treeNode
	wg.Add(1)
	go func() {
		defer wg.Done()
		longTree = long.tree(maxDepth)
	}()

	// Many trees of each depth, one goroutine per depth.
	for depth, i := minDepth, 1; depth <= maxDepth; depth, i = depth+2, i+1 {
		iterations := 1 << (maxDepth - depth + minDepth)
		wg.Add(1)
		go func() {
			defer wg.Done()
			al := newAlloc()
			acc := 0
			for range iterations {
				acc += al.tree(depth).check()
				al.reset()
			}
			al.free()
			out[i] = fmt.Sprintf("%d\t trees of depth %d\t check: %d", iterations, depth, acc)
		}()
	}
	wg.Wait()

	out[len(out)-1] = fmt.Sprintf("long lived tree of depth %d\t check: %d", maxDepth, longTree.check())
	long.free()
	return out
}

// runBinaryTrees is memkit binarytrees.
func runBinaryTrees(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("memkit binarytrees", flag.ContinueOnError)
	alloc := fs.String("alloc", "gc", "how nodes are allocated: `"+strings.Join(allocNames(), "|")+"`")
	verbose := fs.Bool("v", false, "print the wall time and GC cycles to stderr")
	if err := parseFlags(fs, stdout, binaryTreesUsage, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	newAlloc, ok := treeAllocs[*alloc]
	if !ok {
		if *alloc == "experiment" {
			return usagef("binarytrees: -alloc experiment needs a build with GOEXPERIMENT=arenas")
		}
		return usagef("binarytrees: -alloc %q: want %s", *alloc, strings.Join(allocNames(), ", "))
	}
	if fs.NArg() != 1 {
		return usagef("binarytrees: want one argument, the depth N")
	}
	n, err := strconv.Atoi(fs.Arg(0))
	if err != nil || n < 0 || n > 30 {
		return usagef("binarytrees: depth %q: want an integer from 0 to 30", fs.Arg(0))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gc0, start := ms.NumGC, time.Now()
	lines := binaryTrees(n, newAlloc)
	wall := time.Since(start)
	w := bufio.NewWriter(stdout)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if *verbose {
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(stderr, "alloc=%s depth=%d wall=%v gc-cycles=%d gc-cpu-fraction=%.3f heap-sys=%s gomaxprocs=%d %s\n",
			*alloc, n, wall.Round(time.Millisecond), ms.NumGC-gc0, ms.GCCPUFraction,
			sizeName(int(ms.HeapSys)), runtime.GOMAXPROCS(0), runtime.Version())
	}
	return nil
}
