package main

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// wantTrees10 is the benchmark game's output at depth 10
// (binarytrees-output.txt).
const wantTrees10 = `stretch tree of depth 11	 check: 4095
1024	 trees of depth 4	 check: 31744
256	 trees of depth 6	 check: 32512
64	 trees of depth 8	 check: 32704
16	 trees of depth 10	 check: 32752
long lived tree of depth 10	 check: 2047
`

// wantTrees0 is the output at depth 0, which the program raises to 6.
const wantTrees0 = `stretch tree of depth 7	 check: 255
64	 trees of depth 4	 check: 1984
16	 trees of depth 6	 check: 2032
long lived tree of depth 6	 check: 127
`

func TestBinaryTrees_Output(t *testing.T) {
	for _, name := range allocNames() {
		for _, c := range []struct {
			n    string
			want string
		}{{"10", wantTrees10}, {"0", wantTrees0}} {
			t.Run("alloc="+name+"/n="+c.n, func(t *testing.T) {
				out, err := runCLI(t, "binarytrees", "-alloc", name, c.n)
				if err != nil {
					t.Fatal(err)
				}
				if out != c.want {
					t.Errorf("output\n%s\nwant\n%s", out, c.want)
				}
			})
		}
	}
}

// TestBinaryTrees_Same checks that every allocator prints what gc prints,
// at a depth with no known-good text.
func TestBinaryTrees_Same(t *testing.T) {
	n := 14
	if testing.Short() {
		n = 12
	}
	want := strings.Join(binaryTrees(n, treeAllocs["gc"]), "\n")
	for _, name := range allocNames() {
		if got := strings.Join(binaryTrees(n, treeAllocs[name]), "\n"); got != want {
			t.Errorf("alloc=%s: output\n%s\nwant\n%s", name, got, want)
		}
	}
}

// TestBinaryTrees_Distinct checks that a tree of depth d built with each
// allocator has 2^(d+1)-1 distinct nodes: none is shared, unlike in the
// seed's reader-comment "slice arena", whose sibling subtrees alias.
func TestBinaryTrees_Distinct(t *testing.T) {
	for _, name := range allocNames() {
		for _, d := range []int{0, 1, 6, 16} {
			t.Run(fmt.Sprintf("alloc=%s/depth=%d", name, d), func(t *testing.T) {
				al := treeAllocs[name]()
				defer al.free()
				seen := map[*treeNode]bool{}
				var walk func(n *treeNode)
				walk = func(n *treeNode) {
					seen[n] = true
					if n.left != nil {
						walk(n.left)
						walk(n.right)
					}
				}
				root := al.tree(d)
				runtime.GC() // the nodes must survive a collection intact
				walk(root)
				if want := 1<<(d+1) - 1; len(seen) != want || root.check() != want {
					t.Errorf("%d distinct nodes, check %d; want %d", len(seen), root.check(), want)
				}
			})
		}
	}
}

func TestBinaryTrees_Usage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"binarytrees"}, "binarytrees: want one argument, the depth N"},
		{[]string{"binarytrees", "1", "2"}, "binarytrees: want one argument, the depth N"},
		{[]string{"binarytrees", "x"}, `binarytrees: depth "x": want an integer from 0 to 30`},
		{[]string{"binarytrees", "-alloc", "malloc", "5"}, `binarytrees: -alloc "malloc": want ` + strings.Join(allocNames(), ", ")},
		{[]string{"binarytrees", "-nope", "5"}, "binarytrees: flag provided but not defined: -nope (run 'memkit binarytrees -h' for its flags)"},
	} {
		_, err := runCLI(t, c.args...)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v; want %q", c.args, err, c.want)
		}
		if _, ok := err.(usageError); !ok {
			t.Errorf("%q: %T is not a usage error", c.args, err)
		}
	}
	out, err := runCLI(t, "binarytrees", "-h")
	if err != nil || !strings.Contains(out, "-alloc") {
		t.Errorf("-h: %v\n%s", err, out)
	}
}

// BenchmarkBinaryTrees runs the whole program at depth 16 per op with each
// allocator; memkit binarytrees at depth 21 is the measure.
func BenchmarkBinaryTrees(b *testing.B) {
	for _, name := range allocNames() {
		b.Run("depth=16/alloc="+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				binaryTrees(16, treeAllocs[name])
			}
		})
	}
}
