package extent

import (
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/owned"
	"github.com/memkit/memkit/offheap"
)

// Allocator is an exact-size range allocator over blocks of memory, with
// partial free.
//
// An Allocator is not safe for concurrent use; give each goroutine its own,
// or use [NewShared]. Memory it handed out may be read and written on any
// goroutine. The zero value is not usable: an Allocator must be created with
// [New]. It must not be copied.
//
// [Allocator.Malloc] and [Allocator.Free] cost O(log n) for n free ranges
// (a descent of the free-range treap; a few nanoseconds when few ranges are
// free) and do not allocate once the index has held as many ranges before;
// a Malloc of the size of one of the last 8 ranges freed takes it back
// without a descent where first fit would go no lower (see the package
// documentation, "The front cache").
// [Allocator.Borrow] is a bounds check and an add. Requests are served at
// their exact size, with no rounding and no alignment (round n up yourself
// where alignment matters). Bookkeeping is 48 bytes per free range (on
// 64-bit) and about 48 per block, on the Go heap outside the blocks; a
// block holds at most one more free range than it has live allocations.
// Memory is not zeroed: a range holds what its previous user wrote (a new
// Go-heap block reads as zero; as poison in the checked build). Blocks live
// on the Go heap as pointer-free objects the GC never scans, or off it
// [WithOffHeap].
type Allocator struct {
	t tree // the free-range index (tree.go)

	blocks  []block // by block ID; an entry with nil mem is unused
	freeIDs []int32 // unused block IDs
	sorted  []int32 // IDs of live blocks, by address
	hint    int32   // the block the last Free hit, or -1; never a heap fallback
	hintLo  uintptr // its bounds, so that a hit loads nothing else
	hintHi  uintptr

	// The front cache (recent.go): ranges freed recently, about oldest
	// first, kept out of the index so that a Malloc of the same size takes
	// one back without a descent, and merged into the index when evicted
	// or flushed.
	recent  [recentCap]span
	nRecent int
	gain    int32  // +8 per Malloc the cache served, -1 per range cached
	probe   uint32 // Frees that bypassed the cache, for the 1 in 16 that do not

	cfg      config
	lastGrow int // size of the last block grown

	reserved uint64 // bytes of all blocks
	heapRes  uint64 // bytes of heap fallback blocks, outside the budget
	free     uint64 // bytes in free ranges
	peak     uint64 // peak in-use bytes since the last Trim
	hot      uint64 // recent peak of in-use bytes, decaying with every Free (see spare)

	// Borrow's chunks (borrow.go): the one it bumps through, and those
	// filled before it since the last Recycle.
	bChunk []byte
	bOff   int
	bOld   [][]byte

	allocs, frees, fallbacks, failures, grows, releases, badFrees uint64

	alert *budget.Budget // WithBudgetAlert: charged per block, no limit
	dbg   *debugState    // checked build only

	pub published // what ReadStats shows other goroutines (see stats.go)
}

// New returns an allocator configured by opts, or an error naming the first
// invalid option. It reserves no memory until the first Malloc.
func New(opts ...Option) (*Allocator, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	a := &Allocator{t: newTree(), cfg: cfg}
	a.clearHint()
	if cfg.HasAlert() {
		threshold, fn := cfg.Alert()
		a.alert = budget.New(0, threshold, fn) // the limit is checked per block, in mallocSlow
	}
	if checked.Enabled {
		a.dbg = newDebugState()
		checked.Register(a, a.dbg.tr)
	}
	return a, nil
}

// Malloc returns n bytes: len and cap n, the capacity locked, so append past
// it reallocates rather than write into a neighbour. Malloc(0) returns an
// empty slice. It panics with "memkit/extent: negative size" if n < 0.
//
// It takes the lowest-addressed free range of the index that fits (first
// fit), unless a range of exactly n bytes among the last ones freed (the
// front cache, see Free) lies lower, which it takes back without a descent;
// before a first-fit search it merges the front cache into the index. If no
// free range fits, it reserves a new block, or past the budget
// ([WithBudget]) serves n bytes from the Go heap (counted in
// Stats.HeapFallbacks). The memory is not zeroed. A request the system
// cannot provide at all (see internal/sysmem: more than the Go runtime
// serves, or more than the kernel would map now) panics with
// "memkit/extent: Malloc of n bytes: more than the system can provide"
// rather than let make end the process.
func (a *Allocator) Malloc(n int) []byte {
	if checked.Enabled {
		b, _ := a.mallocChecked("Malloc", n, true)
		return b
	}
	return a.malloc(n, true)
}

// TryMalloc is Malloc without the heap fallback: when n does not fit in the
// free ranges and a new block would pass the budget, it returns
// [ErrBudget], leaving the allocator unchanged but for Stats.Failures.
// When the system cannot provide n bytes at all, where Malloc panics, it
// returns "memkit/extent: TryMalloc of n bytes: more than the system can
// provide", an error errors.Is matches with ErrBudget too.
func (a *Allocator) TryMalloc(n int) ([]byte, error) {
	if checked.Enabled {
		return a.mallocChecked("TryMalloc", n, false)
	}
	if b := a.malloc(n, false); b != nil {
		return b, nil
	}
	return nil, tryMallocErr(n)
}

// malloc is Malloc (fallback) and TryMalloc in the release build: the front
// cache, then first fit, then a new block. It returns nil only when
// TryMalloc fails.
func (a *Allocator) malloc(n int, fallback bool) []byte {
	if n <= 0 {
		return a.mallocEmpty(n)
	}
	if i := a.nRecent - 1; i >= 0 {
		// The common case first: the last range freed, below the index.
		if r := &a.recent[i]; r.end-r.start == uintptr(n) && r.start < a.t.low {
			return a.takeRecent(i, n)
		}
		if i = a.recentFit(n); i >= 0 {
			return a.takeRecent(i, n)
		}
		a.flushRecent()
	}
	return a.fitOrGrow(n, fallback)
}

// fitOrGrow serves n bytes from the first free range of the index that
// fits, or else from a new block or the heap (mallocSlow).
func (a *Allocator) fitOrGrow(n int, fallback bool) []byte {
	if x := a.t.fit(uintptr(n)); x != 0 {
		a.allocs++
		return a.take(x, n)
	}
	return a.mallocSlow(n, fallback)
}

func (a *Allocator) mallocEmpty(n int) []byte {
	if n < 0 {
		panic(errNegative)
	}
	return []byte{}
}

// take carves n bytes from the front of free range x.
func (a *Allocator) take(x int32, n int) []byte {
	nd := &a.t.nodes[x]
	blk := &a.blocks[nd.blk]
	off := int(nd.start - blk.base)
	if nd.end-nd.start == uintptr(n) {
		// Delete before changing the range: the maxima on x's path still
		// count its old length, and delete's fix-up relies on that.
		a.t.delete(x)
	} else {
		old := nd.end - nd.start
		nd.start += uintptr(n)
		a.t.shrank(x, old)
	}
	a.free -= uint64(n)
	a.noteUse()
	a.counted()
	return blk.mem[off : off+n : off+n]
}

// Free returns the bytes b[:len(b)] to the allocator. b may be any
// sub-slice of memory Malloc, TryMalloc or FreeRest handed out and not yet
// freed: a whole allocation, a part of one (the rest stays allocated and
// may be freed later, in any order), or a range spanning several adjacent
// allocations of the same block. Free of an empty slice does nothing. After
// Free, the caller must not use the freed bytes.
//
// Free panics with "memkit/extent: double free" if any byte of b is
// already free, and with "memkit/extent: foreign memory" if b is not inside
// one block of this allocator. Both are detected from the free ranges
// alone, those of the index and the few of the front cache, with no
// per-allocation state. The checked build (see docs/extent.md, "Checked
// build") reports these and more with a *memkit.Misuse.
//
// The freed range may wait in the front cache, where a Malloc of its exact
// size takes it back, until it is merged with its neighbours in the index:
// at the next Malloc of another size, when 8 later Frees have pushed it
// out, or at Trim or ReadStats.
func (a *Allocator) Free(b []byte) {
	if len(b) == 0 {
		return
	}
	if checked.Enabled {
		a.freeChecked("Free", b)
		return
	}
	p := sliceAddr(b)
	e := p + uintptr(len(b))
	a.hot -= a.hot >> hotDecay
	id := a.hint // never a heap fallback block
	// (e < p, a slice past the top of the address space, cannot be; the
	// search rejects it anyway.)
	if p < a.hintLo || e > a.hintHi {
		if id = a.blockOfSlow(p, e); id < 0 {
			a.badFree()
			panic(errForeign)
		}
		if a.blocks[id].fallback {
			a.freeRange(p, e, id)
			a.freed()
			return
		}
	}
	// Into the front cache, after the same double-free checks the index
	// makes: against the cached ranges and against the index.
	if a.inRecent(p, e) {
		a.doubleFree()
	}
	if a.gain < 0 {
		// Few cached ranges were taken back: sizes are not repeating.
		// Merge this range into the index (with the index's double-free
		// check), but for one Free in 16, which caches its range to see
		// whether that has changed.
		if a.probe++; a.probe%16 != 0 {
			a.freeRange(p, e, id)
			a.freed()
			return
		}
	}
	if _, _, bad := a.t.aroundRange(p, e); bad {
		a.doubleFree()
	}
	if a.nRecent == recentCap {
		a.merge(a.evict())
	}
	a.recent[a.nRecent] = span{unsafe.Pointer(unsafe.SliceData(b)), p, e, id}
	a.nRecent++
	a.gain--
	a.free += uint64(e - p)
	a.freed()
}

// doubleFree counts a bad free and panics with "double free".
func (a *Allocator) doubleFree() {
	a.badFree()
	panic(errDoubleFree)
}

// freeRange puts [p, e) of block id back in the index, merged with the
// free ranges it touches within the block.
func (a *Allocator) freeRange(p, e uintptr, id int32) {
	t := &a.t
	pred, succ, bad := t.aroundRange(p, e)
	if bad {
		a.doubleFree()
	}
	blk := &a.blocks[id]
	// Ranges touching [p, e) are in the same block unless p or e is the
	// block's edge (another block may start right where this one ends).
	joinL := pred != 0 && t.nodes[pred].end == p && p != blk.base
	joinR := succ != 0 && t.nodes[succ].start == e && e != blk.end()
	x := pred
	switch {
	case joinL && joinR:
		end := t.nodes[succ].end
		t.delete(succ)
		t.nodes[pred].end = end
		t.grew(pred, end-t.nodes[pred].start)
	case joinL:
		t.nodes[pred].end = e
		t.grew(pred, e-t.nodes[pred].start)
	case joinR:
		t.nodes[succ].start = p
		t.low = min(t.low, p)
		t.grew(succ, t.nodes[succ].end-p)
		x = succ
	default:
		t.insert(p, e, id)
		x = 0
	}
	a.free += uint64(e - p)
	// Is the block now one free range?
	start, end := p, e
	if x != 0 {
		start, end = t.nodes[x].start, t.nodes[x].end
	}
	if start == blk.base && end == blk.end() && (blk.fallback || a.spare(blk)) {
		if x == 0 {
			x = t.find(p)
		}
		a.dropBlock(id, x)
	}
}

// FreeRest keeps the first keep bytes of b and frees the rest,
// b[keep:len(b)], returning b[:keep:keep]. It panics with
// "memkit/extent: FreeRest keep out of range" unless 0 <= keep <= len(b),
// and otherwise as [Allocator.Free] does.
func (a *Allocator) FreeRest(b []byte, keep int) []byte {
	if keep < 0 || keep > len(b) {
		panic(errKeep)
	}
	if checked.Enabled && keep < len(b) {
		a.freeChecked("FreeRest", b[keep:])
		return b[:keep:keep]
	}
	a.Free(b[keep:])
	return b[:keep:keep]
}

// noteUse raises the peaks of bytes in use, Trim's and spare's, to the
// use after a Malloc.
func (a *Allocator) noteUse() {
	u := a.reserved - a.free
	a.peak = max(a.peak, u)
	a.hot = max(a.hot, u)
}

// counted publishes the stats when due after a Malloc that counted itself
// in allocs.
func (a *Allocator) counted() {
	if a.allocs%checkEvery == 0 {
		a.maybePublish(a.allocs)
	}
}

// freed counts a Free, and publishes the stats when due.
func (a *Allocator) freed() {
	a.frees++
	if a.frees%checkEvery == 0 {
		a.maybePublish(a.frees)
	}
}

// failed counts a failed TryMalloc and publishes it.
func (a *Allocator) failed() {
	a.failures++
	a.publish()
}

// badFree counts a bad free and publishes it, before the caller panics.
func (a *Allocator) badFree() {
	a.badFrees++
	a.publish()
}

// Trim gives back blocks that are entirely free, keeping enough blocks to
// hold the peak bytes in use since the previous Trim, and returns the bytes
// released. The peak makes Trim hysteretic: a program that alternates
// Malloc and Free, or whose use swings between Trims, keeps the blocks it
// will need again instead of releasing and re-reserving them each time.
// Off-heap blocks are unmapped; heap blocks are left to the GC.
func (a *Allocator) Trim() int {
	if checked.Enabled {
		a.releaseHeld("Trim")
	}
	a.flushRecent()
	keep := a.peak
	released := 0
	for i := len(a.sorted) - 1; i >= 0; i-- {
		id := a.sorted[i]
		blk := &a.blocks[id]
		size := uint64(len(blk.mem))
		if a.reserved-size < keep {
			continue
		}
		x := a.t.find(blk.base)
		if x == 0 || a.t.nodes[x].end != blk.end() {
			continue // not entirely free
		}
		a.dropBlock(id, x)
		released += int(size)
	}
	a.peak = a.reserved - a.free
	a.publish()
	return released
}

// Close gives back every block, off-heap ones unmapped, and resets the
// allocator to its state after New (the counters are kept). Every slice it
// handed out, and every Borrow, becomes invalid.
func (a *Allocator) Close() {
	if checked.Enabled {
		a.releaseHeld("Close")
	}
	for _, id := range a.sorted {
		blk := &a.blocks[id]
		owned.Remove(blk.mem, "extent") // as dropBlock does
		if a.cfg.offHeap && !blk.fallback {
			_ = offheap.Free(blk.mem)
		}
		a.releases++
	}
	a.alert.Release(int64(a.reserved))
	if checked.Enabled {
		a.dbg.reset()
	}
	a.t = newTree()
	a.blocks, a.freeIDs, a.sorted = nil, nil, nil
	a.clearHint()
	a.recent, a.nRecent, a.gain = [recentCap]span{}, 0, 0
	a.bChunk, a.bOff, a.bOld = nil, 0, nil
	a.reserved, a.heapRes, a.free, a.peak, a.hot, a.lastGrow = 0, 0, 0, 0, 0, 0
	a.publish()
}

// sliceAddr is the address of b's first byte.
func sliceAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
