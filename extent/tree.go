package extent

// tree is the free-range index: a treap of the free ranges keyed by start
// address, each node also holding the largest range length in its subtree.
// Ranges never overlap, so ordering by start orders them entirely.
//
// The augmentation answers "the lowest-addressed range of at least n bytes"
// by one descent (address-ordered first fit); the ordering answers "the
// ranges just before and after an address" for coalescing and for the
// double-free check. Random priorities keep the expected depth O(log n).
//
// Nodes live in one slice and link by int32 index, with 0 as nil, so the GC
// has no pointers to scan and a freed node is reused.
type tree struct {
	nodes    []node
	root     int32
	freeNode int32 // head of the list of unused nodes, linked by right
	rnd      uint32
	count    int // free ranges
	// low is at most the start of every range: lowered by insert and by
	// whoever moves a range's start down, made exact by lowest.
	low uintptr
}

type node struct {
	start, end          uintptr // the free range [start, end)
	max                 uintptr // the largest end-start in this subtree
	left, right, parent int32
	prio                uint32
	blk                 int32 // the block the range lies in: its ID
}

func newTree() tree {
	return tree{nodes: make([]node, 1, 64), rnd: 0x9E3779B9, low: ^uintptr(0)}
}

// update recomputes x's max from its range and its children's.
func (t *tree) update(x int32) {
	nodes := t.nodes
	n := &nodes[x]
	n.max = max(n.end-n.start, nodes[n.left].max, nodes[n.right].max)
}

// fixUp recomputes max from x up to the root, stopping at the first node
// whose max does not change: its ancestors' inputs are then unchanged.
func (t *tree) fixUp(x int32) {
	nodes := t.nodes
	for x != 0 {
		n := &nodes[x]
		m := max(n.end-n.start, nodes[n.left].max, nodes[n.right].max)
		if m == n.max {
			return
		}
		n.max = m
		x = n.parent
	}
}

// grew records that range x grew to l bytes: the maxima on its path rise to
// l where they are below it. Cheaper than fixUp, which reloads children.
func (t *tree) grew(x int32, l uintptr) {
	nodes := t.nodes
	for x != 0 && nodes[x].max < l {
		nodes[x].max = l
		x = nodes[x].parent
	}
}

// shrank records that range x, which was old bytes long, shrank: the maxima
// on its path change only if x's was its old length.
func (t *tree) shrank(x int32, old uintptr) {
	if t.nodes[x].max == old {
		t.fixUp(x)
	}
}

// fit returns the lowest-addressed range of at least n bytes, or 0.
func (t *tree) fit(n uintptr) int32 {
	nodes := t.nodes
	x := t.root
	if nodes[x].max < n {
		return 0
	}
	for {
		nd := &nodes[x]
		if l := nd.left; nodes[l].max >= n {
			x = l
			continue
		}
		if nd.end-nd.start >= n {
			return x
		}
		x = nd.right
	}
}

// around returns the range with the largest start <= p and the range with
// the smallest start > p; either may be 0.
func (t *tree) around(p uintptr) (pred, succ int32) {
	nodes := t.nodes
	for x := t.root; x != 0; {
		if n := &nodes[x]; n.start <= p {
			pred = x
			x = n.right
		} else {
			succ = x
			x = n.left
		}
	}
	return pred, succ
}

// aroundRange is around(p), and whether [p, e) overlaps a free range:
// the one before p ending past p, or the one after it starting before e.
// Free's and freeRange's double-free check.
func (t *tree) aroundRange(p, e uintptr) (pred, succ int32, overlap bool) {
	pred, succ = t.around(p)
	return pred, succ, pred != 0 && t.nodes[pred].end > p || succ != 0 && t.nodes[succ].start < e
}

// lowest returns the start of the lowest-addressed range, or the largest
// uintptr if there is none.
func (t *tree) lowest() uintptr {
	x := t.root
	if x == 0 {
		return ^uintptr(0)
	}
	for t.nodes[x].left != 0 {
		x = t.nodes[x].left
	}
	return t.nodes[x].start
}

// find returns the range starting at p, or 0.
func (t *tree) find(p uintptr) int32 {
	for x := t.root; x != 0; {
		s := t.nodes[x].start
		switch {
		case p == s:
			return x
		case p < s:
			x = t.nodes[x].left
		default:
			x = t.nodes[x].right
		}
	}
	return 0
}

// replace makes c take p's place under p's parent.
func (t *tree) replace(p, c int32) {
	g := t.nodes[p].parent
	if c != 0 {
		t.nodes[c].parent = g
	}
	switch {
	case g == 0:
		t.root = c
	case t.nodes[g].left == p:
		t.nodes[g].left = c
	default:
		t.nodes[g].right = c
	}
}

// rotateUp lifts x above its parent. The subtree's set of ranges does not
// change, so only the two nodes' max need recomputing.
func (t *tree) rotateUp(x int32) {
	p := t.nodes[x].parent
	t.replace(p, x)
	if t.nodes[p].left == x {
		c := t.nodes[x].right
		t.nodes[p].left = c
		if c != 0 {
			t.nodes[c].parent = p
		}
		t.nodes[x].right = p
	} else {
		c := t.nodes[x].left
		t.nodes[p].right = c
		if c != 0 {
			t.nodes[c].parent = p
		}
		t.nodes[x].left = p
	}
	t.nodes[p].parent = x
	t.update(p)
	t.update(x)
}

// insert adds the free range [start, end) of block blk, which overlaps no
// range in the tree.
func (t *tree) insert(start, end uintptr, blk int32) {
	x := t.freeNode
	if x != 0 {
		t.freeNode = t.nodes[x].right
	} else {
		t.nodes = append(t.nodes, node{})
		x = int32(len(t.nodes) - 1)
	}
	t.rnd ^= t.rnd << 13
	t.rnd ^= t.rnd >> 17
	t.rnd ^= t.rnd << 5
	t.nodes[x] = node{start: start, end: end, max: end - start, prio: t.rnd, blk: blk}
	t.count++
	t.low = min(t.low, start)
	if t.root == 0 {
		t.root = x
		return
	}
	p := t.root
	for {
		n := &t.nodes[p]
		c := &n.right
		if start < n.start {
			c = &n.left
		}
		if *c == 0 {
			*c = x
			break
		}
		p = *c
	}
	t.nodes[x].parent = p
	t.fixUp(p)
	for q := t.nodes[x].parent; q != 0 && t.nodes[x].prio < t.nodes[q].prio; q = t.nodes[x].parent {
		t.rotateUp(x)
	}
}

// delete removes range x: it is rotated down until it has at most one
// child, then spliced out. x's range must not have changed since the
// maxima on its path were last fixed up: the fix-up after the splice stops
// at the first maximum that does not change.
func (t *tree) delete(x int32) {
	for {
		l, r := t.nodes[x].left, t.nodes[x].right
		if l == 0 || r == 0 {
			c := l | r
			p := t.nodes[x].parent
			t.replace(x, c)
			t.fixUp(p)
			break
		}
		if t.nodes[l].prio < t.nodes[r].prio {
			t.rotateUp(l)
		} else {
			t.rotateUp(r)
		}
	}
	t.nodes[x] = node{right: t.freeNode}
	t.freeNode = x
	t.count--
}
