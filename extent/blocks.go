package extent

import (
	"fmt"
	"sort"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/owned"
	"github.com/memkit/memkit/internal/sysmem"
	"github.com/memkit/memkit/offheap"
)

// The blocks: reserved on demand, found by address, given back with
// hysteresis (see docs/extent.md, "Blocks, growth, limits and Trim").

// block is one piece of memory the allocator carves ranges from.
type block struct {
	mem      []byte
	base     uintptr
	fallback bool // a heap fallback past the budget: dropped once all free
}

func (b *block) end() uintptr { return b.base + uintptr(len(b.mem)) }

// mallocSlow serves n bytes when no free range fits: from a new block, or,
// past the budget, from the heap (fallback) or not at all (nil, counted in
// failures: see tryMallocErr).
func (a *Allocator) mallocSlow(n int, fallback bool) []byte {
	if !sysmem.Available(uint64(n)) {
		return a.refuse("Malloc", n, fallback)
	}
	size := a.nextBlockSize(n)
	if lim := a.cfg.Limit(); lim != 0 && a.reserved-a.heapRes+uint64(size) > uint64(lim) {
		// Shrink the block to what the budget has left, if n fits in it.
		left := lim - int64(a.reserved-a.heapRes)
		if left < int64(n) {
			return a.overBudget(n, fallback)
		}
		size = int(left)
	}
	mem, err := a.reserve(size)
	if err != nil {
		// The OS refused: treat it as the budget being used up.
		return a.overBudget(n, fallback)
	}
	id := a.addBlock(mem, false)
	a.grows++
	a.lastGrow = size
	a.t.insert(a.blocks[id].base, a.blocks[id].end(), id)
	a.free += uint64(size)
	a.allocs++
	b := a.take(a.t.find(a.blocks[id].base), n)
	a.publish()
	return b
}

// overBudget serves n bytes that no block within the budget can hold:
// Malloc (fallback) from the heap, TryMalloc not at all.
func (a *Allocator) overBudget(n int, fallback bool) []byte {
	if !fallback {
		a.failed()
		return nil
	}
	return a.heapFallback(n)
}

// refuse refuses a request of n bytes that no block, and no heap fallback,
// can hold (make would end the process): TryMalloc (fallback false) fails,
// Malloc (op) panics.
func (a *Allocator) refuse(op string, n int, fallback bool) []byte {
	if !fallback {
		a.failed()
		return nil
	}
	panic(fmt.Sprintf(errTooLargeFmt, op, n))
}

// tryMallocErr is the error of a TryMalloc of n bytes that failed: n is
// more than the system can provide, or past the budget.
func tryMallocErr(n int) error {
	if !sysmem.Available(uint64(n)) {
		return tooLargeError{n}
	}
	return ErrBudget
}

// nextBlockSize is the size of the next block to hold a request of n bytes.
func (a *Allocator) nextBlockSize(n int) int {
	size := a.cfg.blockSize
	if a.lastGrow > 0 && a.cfg.growth > 1 {
		size = int(min(float64(a.lastGrow)*a.cfg.growth, maxBlock))
	}
	size = max(size, a.cfg.blockSize)
	if n > size {
		size = n // a block of its own
	}
	return size
}

// reserve takes a block of size bytes from the heap or, WithOffHeap, from
// the OS: poisoned in the checked build.
func (a *Allocator) reserve(size int) ([]byte, error) {
	var b []byte
	if a.cfg.offHeap {
		m, err := offheap.Alloc(size)
		if err != nil {
			return nil, err
		}
		b = m[:size:size]
	} else {
		if !sysmem.Available(uint64(size)) {
			return nil, tooLargeError{size}
		}
		b = make([]byte, size)
	}
	if checked.Enabled {
		checked.Fill(b, checked.PoisonByte)
	}
	return b, nil
}

// heapFallback serves n bytes past the budget from a Go-heap block of
// exactly n bytes, which is dropped as soon as all of it is free again
// (until then, its freed parts serve other requests like any free range).
// Fallback blocks do not count against the budget.
func (a *Allocator) heapFallback(n int) []byte {
	mem := make([]byte, n)
	if checked.Enabled {
		checked.Fill(mem, checked.PoisonByte)
	}
	id := a.addBlock(mem, true)
	a.allocs++
	a.fallbacks++
	a.noteUse()
	a.publish()
	return a.blocks[id].mem
}

// addBlock records mem as a block and returns its ID.
func (a *Allocator) addBlock(mem []byte, fallback bool) int32 {
	b := block{mem: mem, base: sliceAddr(mem), fallback: fallback}
	var id int32
	if k := len(a.freeIDs); k > 0 {
		id = a.freeIDs[k-1]
		a.freeIDs = a.freeIDs[:k-1]
		a.blocks[id] = b
	} else {
		id = int32(len(a.blocks))
		a.blocks = append(a.blocks, b)
	}
	i := a.blockAbove(b.base)
	a.sorted = append(a.sorted, 0)
	copy(a.sorted[i+1:], a.sorted[i:])
	a.sorted[i] = id
	a.reserved += uint64(len(mem))
	if fallback {
		a.heapRes += uint64(len(mem))
	}
	a.alert.Charge(int64(len(mem)))
	owned.Add(mem, "extent", !a.cfg.offHeap || fallback)
	return id
}

// blockAbove returns the index in sorted of the first block above p.
func (a *Allocator) blockAbove(p uintptr) int {
	return sort.Search(len(a.sorted), func(i int) bool { return a.blocks[a.sorted[i]].base > p })
}

// dropBlock forgets block id, whose whole range is free range x, and gives
// its memory back.
func (a *Allocator) dropBlock(id, x int32) {
	a.t.delete(x)
	blk := a.blocks[id]
	size := uint64(len(blk.mem))
	a.free -= size
	a.reserved -= size
	if blk.fallback {
		a.heapRes -= size
	}
	a.alert.Release(int64(size))
	for i, s := range a.sorted {
		if s == id {
			a.sorted = append(a.sorted[:i], a.sorted[i+1:]...)
			break
		}
	}
	owned.Remove(blk.mem, "extent")
	a.blocks[id] = block{}
	a.freeIDs = append(a.freeIDs, id)
	if a.hint == id {
		a.clearHint()
	}
	a.releases++
	a.publish()
	if a.cfg.offHeap && !blk.fallback {
		// Unmapping a mapping offheap gave us cannot fail but for an OS
		// error, which leaves the mapping in place: nothing to undo here.
		_ = offheap.Free(blk.mem)
	}
}

// owns reports whether one block of the allocator holds [p, e): the hint's
// bounds inline, the search out of line.
func (a *Allocator) owns(p, e uintptr) bool {
	return p >= a.hintLo && e <= a.hintHi && e >= p || a.blockOfSlow(p, e) >= 0
}

// blockOf returns the ID of the block holding [p, e), or -1.
func (a *Allocator) blockOf(p, e uintptr) int32 {
	if p >= a.hintLo && e <= a.hintHi && e >= p {
		return a.hint
	}
	return a.blockOfSlow(p, e)
}

// blockOfSlow is blockOf's binary search, which sets the hint.
func (a *Allocator) blockOfSlow(p, e uintptr) int32 {
	i := a.blockAbove(p) - 1
	if i < 0 || e < p {
		return -1
	}
	id := a.sorted[i]
	b := &a.blocks[id]
	if e > b.end() {
		return -1
	}
	if !b.fallback {
		// Free relies on the hint never being a heap fallback block.
		a.hint, a.hintLo, a.hintHi = id, b.base, b.end()
	}
	return id
}

// clearHint forgets the hint: no address is within its bounds.
func (a *Allocator) clearHint() { a.hint, a.hintLo, a.hintHi = -1, 1, 0 }

// hotDecay is the recent peak's decay: it loses 1/2^hotDecay of itself
// with every Free.
const hotDecay = 13

// spare reports whether blk, a block of the budget that a Free has just
// left entirely free, is given back at once: when the other blocks hold the
// recent peak of bytes in use plus a quarter, and at least one block stays.
// The recent peak is raised by every Malloc that passes it and decays by
// 1/8192 of itself with every Free, so it is about the peak of the last few
// ten thousand Frees: an alloc/free loop never gives back the block it will
// take again (its peak is renewed every turn), a program whose use swings
// keeps what the swings need, and one whose use has fallen stops holding
// blocks for its old peak. A block left entirely free while use was still
// high stays until [Allocator.Trim] or until a Free leaves it free again.
func (a *Allocator) spare(blk *block) bool {
	size := uint64(len(blk.mem))
	rest := a.reserved - a.heapRes - size
	return rest > 0 && rest >= a.hot+a.hot/4
}
