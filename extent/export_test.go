package extent

import "github.com/memkit/memkit/internal/checked"

// Test-only access to internals.

// BorrowChunks returns the chunks Borrow holds: the current one and those
// filled since the last Recycle.
func (a *Allocator) BorrowChunks() [][]byte { return a.borrowChunks() }

// FreeRanges merges the front cache (and the checked build's quarantine)
// into the index and reports the number of free ranges.
func (a *Allocator) FreeRanges() int {
	a.FlushRecent()
	return a.t.count
}

// FlushRecent merges the front cache into the index, and in the checked
// build gives back the ranges its quarantine holds.
func (a *Allocator) FlushRecent() {
	if checked.Enabled {
		a.releaseHeld("FlushRecent")
	}
	a.flushRecent()
}

// Blocks reports the number of blocks held.
func (a *Allocator) Blocks() int { return len(a.sorted) }

// CheckTree verifies the treap's invariants: ordering, disjoint ranges,
// heap order of priorities, parent links and subtree maxima. It returns a
// description of the first violation, or "".
func (a *Allocator) CheckTree() string {
	t := &a.t
	count := 0
	var prevEnd uintptr
	var walk func(x, parent int32) (uintptr, string)
	walk = func(x, parent int32) (uintptr, string) {
		if x == 0 {
			return 0, ""
		}
		n := t.nodes[x]
		if n.parent != parent {
			return 0, "bad parent link"
		}
		if parent != 0 && n.prio < t.nodes[parent].prio {
			return 0, "heap order violated"
		}
		lm, msg := walk(n.left, x)
		if msg != "" {
			return 0, msg
		}
		if n.start >= n.end {
			return 0, "empty range in the index"
		}
		if count > 0 && n.start < prevEnd {
			return 0, "ranges out of order or overlapping"
		}
		prevEnd = n.end
		count++
		rm, msg := walk(n.right, x)
		if msg != "" {
			return 0, msg
		}
		m := max(n.end-n.start, lm, rm)
		if m != n.max {
			return 0, "stale subtree maximum"
		}
		return m, ""
	}
	if _, msg := walk(t.root, 0); msg != "" {
		return msg
	}
	if count != t.count {
		return "range count off"
	}
	return ""
}

// GuardTail is the guard bytes after each allocation: 16 in the checked
// build, none in the release build.
var GuardTail = func() int {
	if checked.Enabled {
		return guardTail
	}
	return 0
}()

// GuardBytes reports the guard bytes allocated after live allocations (0
// in the release build).
func (a *Allocator) GuardBytes() int {
	if a.dbg == nil {
		return 0
	}
	return len(a.dbg.guarded) * guardTail
}

// BlockBounds returns the [start, end) addresses of every block, by
// address.
func (a *Allocator) BlockBounds() [][2]uintptr {
	out := make([][2]uintptr, 0, len(a.sorted))
	for _, id := range a.sorted {
		out = append(out, [2]uintptr{a.blocks[id].base, a.blocks[id].end()})
	}
	return out
}

// RecentLen reports the number of ranges in the front cache.
func (a *Allocator) RecentLen() int { return a.nRecent }

// Shards reports the number of shards of a Shared.
func (s *Shared) Shards() int { return len(s.shards) }

// FrontAccount counts the chunks of a Shared's front cache by state: idle,
// out (both chunkFront), detached and gone.
func (s *Shared) FrontAccount() (idle, out, detached, gone int) {
	s.segMu.Lock()
	defer s.segMu.Unlock()
	for sg := range s.all {
		for i := range sg.recs {
			r := &sg.recs[i]
			switch r.state.Load() {
			case chunkFront:
				if r.slot.Out() {
					out++
				} else {
					idle++
				}
			case chunkDetached:
				detached++
			default:
				gone++
			}
		}
	}
	return idle, out, detached, gone
}

// FrontCarves reports how many segments the front cache carved from the
// shards' Allocators, and how many tickets its idle sets made.
func (s *Shared) FrontCarves() (segs, tickets uint64) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock.Lock()
		segs += sh.segAllocs
		sh.Unlock()
	}
	for c := range nFront {
		tickets += s.front.idle[c].Made()
	}
	return segs, tickets
}

// FrontRecovered reports how many idle chunks' tickets a GC dropped and a
// cleanup brought back, for the sweep.
func (s *Shared) FrontRecovered() (n uint64) {
	for c := range nFront {
		n += s.front.idle[c].Recovered()
	}
	return n
}

// Sweep is the sweep the Shared runs after each GC.
func (s *Shared) Sweep() { s.sweep() }
