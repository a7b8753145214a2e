package extent

import (
	"fmt"
	"sort"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/sysmem"
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
	t tree

	slots    []block // by block ID; a slot with nil mem is unused
	freeSlot []int32
	sorted   []int32 // IDs of live blocks, by address
	hint     int32   // the block the last Free hit, or -1; never a heap fallback
	hintLo   uintptr // its bounds, so that a hit loads nothing else
	hintHi   uintptr

	// The front cache: ranges freed recently, about oldest first, kept out of
	// the index so that a Malloc of the same size takes one back without
	// a descent, and merged into the index when evicted or flushed.
	recent  [recentCap]span
	nRecent int
	gain    int32  // +8 per Malloc the cache served, -1 per range cached
	probe   uint32 // Frees that bypassed the cache, for the 1 in 16 that do not

	cfg      config
	lastGrow int // size of the last block grown

	reserved uint64 // bytes of all blocks
	heapRes  uint64 // bytes of heap fallback blocks, outside MaxTotal
	free     uint64 // bytes in free ranges
	peak     uint64 // peak in-use bytes since the last Trim
	hot      uint64 // recent peak of in-use bytes, decaying with every Free (see release)

	// Borrow's chunks: the one it bumps through, and those filled before
	// it since the last Recycle.
	bChunk []byte
	bOff   int
	bOld   [][]byte

	allocs, frees, fallbacks, failures, grows, releases, badFrees uint64

	alert *budget.Budget // WithBudgetAlert: charged per block, no limit
	dbg   *debugState    // checked build only

	pub published // what ReadStats shows other goroutines (see stats.go)
}

// recentCap bounds the front cache: few enough that scanning it costs a
// few nanoseconds, enough for the allocations a loop frees and makes again.
const recentCap = 8

// span is a free range of a block in the front cache. ptr is its start as
// a pointer, from the slice Free was given, so that Malloc makes the slice
// back without looking up the block.
type span struct {
	ptr        unsafe.Pointer
	start, end uintptr
	blk        int32
}

// block is one piece of memory the allocator carves ranges from.
type block struct {
	mem      []byte
	base     uintptr
	fallback bool // a heap fallback past MaxTotal: dropped once all free
}

func (b *block) end() uintptr { return b.base + uintptr(len(b.mem)) }

const (
	errNegative   = "memkit/extent: negative size"
	errDoubleFree = "memkit/extent: double free"
	errForeign    = "memkit/extent: foreign memory"
	errKeep       = "memkit/extent: FreeRest keep out of range"
	// errTooLargeFmt is the panic of a Malloc or Borrow of more bytes than
	// the system can provide (see internal/sysmem), with the call and n.
	errTooLargeFmt = "memkit/extent: %s of %d bytes: more than the system can provide"
)

func errorf(format string, args ...any) error { return fmt.Errorf("memkit/extent: "+format, args...) }

// New returns an allocator configured by opts, or an error naming the first
// invalid option. It reserves no memory until the first Malloc.
func New(opts ...Option) (*Allocator, error) {
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			return nil, errorf("option %d of %d is nil", i+1, len(opts))
		}
		o(&cfg)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	a := &Allocator{t: newTree(), cfg: cfg, hint: -1, hintLo: 1}
	if cfg.alertFn != nil {
		a.alert = budget.New(0, cfg.alertAt, cfg.alertFn)
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
// free range fits, it reserves a new block, or past MaxTotal serves n bytes
// from the Go heap (counted in Stats.HeapFallbacks). The memory is not
// zeroed. A request the system cannot provide at all (see
// internal/sysmem: more than the Go runtime serves, or more than the kernel
// would map now) panics with "memkit/extent: Malloc of n bytes: more than
// the system can provide" rather than let make end the process.
func (a *Allocator) Malloc(n int) []byte {
	if checked.Enabled {
		b, _ := a.mallocChecked("Malloc", n, true)
		return b
	}
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
	x := a.t.fit(uintptr(n))
	if x == 0 {
		b, _ := a.mallocSlow(n, true)
		return b
	}
	a.allocs++
	return a.take(x, n)
}

// recentFit returns the front-cache entry of exactly n bytes to take back,
// or -1. An entry is taken only where first fit would go no lower, so that
// the cache changes no placement: when it lies below every range of the
// index (t.low, a lower bound of their starts, answers that without a
// descent in the common case), or below the index's first fit for n.
func (a *Allocator) recentFit(n int) int {
	for i := a.nRecent - 1; i >= 0; i-- {
		if r := &a.recent[i]; r.end-r.start == uintptr(n) {
			if r.start < a.t.low {
				return i
			}
			return a.recentFitSlow(i, n)
		}
	}
	return -1
}

// recentFitSlow is recentFit for entry i when t.low does not settle it: it
// makes t.low exact, then compares with the index's first fit.
func (a *Allocator) recentFitSlow(i, n int) int {
	t := &a.t
	t.low = t.lowest()
	start := a.recent[i].start
	if start < t.low {
		return i
	}
	if x := t.fit(uintptr(n)); x == 0 || start < t.nodes[x].start {
		return i
	}
	return -1
}

// takeRecent hands out the range of n bytes in front-cache entry i.
func (a *Allocator) takeRecent(i, n int) []byte {
	last := a.nRecent - 1
	ptr := a.recent[i].ptr
	if i != last {
		a.recent[i] = a.recent[last]
	}
	a.recent[last].ptr = nil
	a.nRecent = last
	a.gain = min(a.gain+8, 64)
	a.free -= uint64(n)
	a.allocs++
	a.noteUse()
	a.counted()
	return unsafe.Slice((*byte)(ptr), n)
}

// flushRecent merges every range of the front cache into the index.
func (a *Allocator) flushRecent() {
	for i := range a.nRecent {
		r := a.recent[i]
		a.free -= uint64(r.end - r.start) // freeRange counts it again
		a.freeRange(r.start, r.end, r.blk)
		a.recent[i].ptr = nil
	}
	a.nRecent = 0
}

func (a *Allocator) mallocEmpty(n int) []byte {
	if n < 0 {
		panic(errNegative)
	}
	return []byte{}
}

// TryMalloc is Malloc without the heap fallback: when n does not fit in the
// free ranges and a new block would pass MaxTotal, it returns [ErrNoSpace],
// leaving the allocator unchanged but for Stats.Failures. It returns an
// error wrapping ErrNoSpace too when the system cannot provide n bytes at
// all, where Malloc panics.
func (a *Allocator) TryMalloc(n int) ([]byte, error) {
	if checked.Enabled {
		return a.mallocChecked("TryMalloc", n, false)
	}
	if n <= 0 {
		return a.mallocEmpty(n), nil
	}
	if i := a.nRecent - 1; i >= 0 {
		// The common case first: the last range freed, below the index.
		if r := &a.recent[i]; r.end-r.start == uintptr(n) && r.start < a.t.low {
			return a.takeRecent(i, n), nil
		}
		if i = a.recentFit(n); i >= 0 {
			return a.takeRecent(i, n), nil
		}
		a.flushRecent()
	}
	x := a.t.fit(uintptr(n))
	if x == 0 {
		return a.mallocSlow(n, false)
	}
	a.allocs++
	return a.take(x, n), nil
}

// take carves n bytes from the front of free range x.
func (a *Allocator) take(x int32, n int) []byte {
	nd := &a.t.nodes[x]
	blk := &a.slots[nd.blk]
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

// mallocSlow serves n bytes when no free range fits: from a new block, or,
// past MaxTotal, from the heap (fallback) or not at all.
func (a *Allocator) mallocSlow(n int, fallback bool) ([]byte, error) {
	if !sysmem.Available(uint64(n)) {
		return nil, a.tooLarge(n, fallback)
	}
	size := a.nextBlockSize(n)
	if lim := a.cfg.maxTotal; lim != 0 && a.reserved-a.heapRes+uint64(size) > uint64(lim) {
		// Shrink the block to what the budget has left, if n fits in it.
		left := lim - int64(a.reserved-a.heapRes)
		if left < int64(n) {
			if !fallback {
				a.failed()
				return nil, ErrNoSpace
			}
			return a.heapFallback(n), nil
		}
		size = int(left)
	}
	mem, err := a.reserve(size)
	if err != nil {
		// The OS refused: treat it as the budget being used up.
		if !fallback {
			a.failed()
			return nil, ErrNoSpace
		}
		return a.heapFallback(n), nil
	}
	id := a.addBlock(mem, false)
	a.grows++
	a.lastGrow = size
	a.t.insert(a.slots[id].base, a.slots[id].end(), id)
	a.free += uint64(size)
	a.allocs++
	b := a.take(a.t.find(a.slots[id].base), n)
	a.publish()
	return b, nil
}

// tooLarge refuses a request of n bytes that no block, and no heap
// fallback, can hold (make would end the process): TryMalloc (fallback
// false) gets the error it returns, Malloc panics.
func (a *Allocator) tooLarge(n int, fallback bool) error {
	if !fallback {
		a.failed()
		return fmt.Errorf("memkit/extent: %d bytes: %w", n, errTooLarge)
	}
	panic(fmt.Sprintf(errTooLargeFmt, "Malloc", n))
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

func (a *Allocator) reserve(size int) ([]byte, error) {
	if a.cfg.offHeap {
		b, err := offheap.Alloc(size)
		if err != nil {
			return nil, err
		}
		b = b[:size:size]
		if checked.Enabled {
			checked.Fill(b, checked.PoisonByte)
		}
		return b, nil
	}
	if !sysmem.Available(uint64(size)) {
		return nil, errTooLarge
	}
	b := make([]byte, size)
	if checked.Enabled {
		checked.Fill(b, checked.PoisonByte)
	}
	return b, nil
}

// heapFallback serves n bytes past MaxTotal from a Go-heap block of exactly
// n bytes, which is dropped as soon as all of it is free again (until then,
// its freed parts serve other requests like any free range). Fallback
// blocks do not count against MaxTotal.
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
	return a.slots[id].mem
}

// addBlock records mem as a block and returns its ID.
func (a *Allocator) addBlock(mem []byte, fallback bool) int32 {
	b := block{mem: mem, base: uintptr(unsafe.Pointer(unsafe.SliceData(mem))), fallback: fallback}
	var id int32
	if k := len(a.freeSlot); k > 0 {
		id = a.freeSlot[k-1]
		a.freeSlot = a.freeSlot[:k-1]
		a.slots[id] = b
	} else {
		id = int32(len(a.slots))
		a.slots = append(a.slots, b)
	}
	i := sort.Search(len(a.sorted), func(i int) bool { return a.slots[a.sorted[i]].base > b.base })
	a.sorted = append(a.sorted, 0)
	copy(a.sorted[i+1:], a.sorted[i:])
	a.sorted[i] = id
	a.reserved += uint64(len(mem))
	if fallback {
		a.heapRes += uint64(len(mem))
	}
	a.alert.Charge(int64(len(mem)))
	return id
}

// dropBlock forgets block id, whose whole range is free range x, and gives
// its memory back.
func (a *Allocator) dropBlock(id, x int32) {
	a.t.delete(x)
	blk := a.slots[id]
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
	a.slots[id] = block{}
	a.freeSlot = append(a.freeSlot, id)
	if a.hint == id {
		a.hint, a.hintLo, a.hintHi = -1, 1, 0
	}
	a.releases++
	a.publish()
	if a.cfg.offHeap && !blk.fallback {
		// Unmapping a mapping offheap gave us cannot fail but for an OS
		// error, which leaves the mapping in place: nothing to undo here.
		_ = offheap.Free(blk.mem)
	}
}

// owns reports whether one block of the allocator holds [p, e).
func (a *Allocator) owns(p, e uintptr) bool { return e >= p && a.blockOf(p, e) >= 0 }

// blockOf returns the ID of the block holding [p, e), or -1.
func (a *Allocator) blockOf(p, e uintptr) int32 {
	if p >= a.hintLo && e <= a.hintHi {
		return a.hint
	}
	return a.blockOfSlow(p, e)
}

// blockOfSlow is blockOf's binary search, which sets the hint.
func (a *Allocator) blockOfSlow(p, e uintptr) int32 {
	i := sort.Search(len(a.sorted), func(i int) bool { return a.slots[a.sorted[i]].base > p }) - 1
	if i < 0 {
		return -1
	}
	id := a.sorted[i]
	b := &a.slots[id]
	if e > b.end() {
		return -1
	}
	if !b.fallback {
		// Free relies on the hint never being a heap fallback block.
		a.hint, a.hintLo, a.hintHi = id, b.base, b.end()
	}
	return id
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
// per-allocation state. The checked build (see the package documentation)
// reports these and more with a *checked.Misuse.
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
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	e := p + uintptr(len(b))
	a.hot -= a.hot >> hotDecay
	id := a.hint // never a heap fallback block
	if p < a.hintLo || e > a.hintHi || e < p {
		if id = a.blockOfSlow(p, e); id < 0 || e < p {
			a.badFree()
			panic(errForeign)
		}
		if a.slots[id].fallback {
			a.freeRange(p, e, id)
			a.freed()
			return
		}
	}
	// Into the front cache, after the same double-free checks the index
	// makes: against the cached ranges and against the index.
	for i := range a.nRecent {
		if r := &a.recent[i]; p < r.end && r.start < e {
			a.badFree()
			panic(errDoubleFree)
		}
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
	t := &a.t
	pred, succ := t.around(p)
	if pred != 0 && t.nodes[pred].end > p || succ != 0 && t.nodes[succ].start < e {
		a.badFree()
		panic(errDoubleFree)
	}
	if a.nRecent == recentCap {
		// Merge the oldest into the index.
		r := a.recent[0]
		copy(a.recent[:], a.recent[1:])
		a.nRecent--
		a.recent[a.nRecent].ptr = nil
		a.free -= uint64(r.end - r.start)
		a.freeRange(r.start, r.end, r.blk)
	}
	a.recent[a.nRecent] = span{unsafe.Pointer(unsafe.SliceData(b)), p, e, id}
	a.nRecent++
	a.gain--
	a.free += uint64(e - p)
	a.freed()
}

// freeRange puts [p, e) of block id back in the index, merged with the
// free ranges it touches within the block.
func (a *Allocator) freeRange(p, e uintptr, id int32) {
	t := &a.t
	pred, succ := t.around(p)
	if pred != 0 && t.nodes[pred].end > p || succ != 0 && t.nodes[succ].start < e {
		a.badFree()
		panic(errDoubleFree)
	}
	blk := &a.slots[id]
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

// Borrow returns n bytes of scratch memory, valid until the next
// [Allocator.Recycle]: it must not be freed, and must not be used after
// Recycle. It is a bounds check and an add, with no per-call bookkeeping,
// bumping through chunks of BorrowChunk bytes (a larger request gets a chunk
// of its own). The memory is not zeroed. Borrow panics with
// "memkit/extent: negative size" if n < 0, and as Malloc does when the
// system cannot provide n bytes ("memkit/extent: Borrow of n bytes: ...").
func (a *Allocator) Borrow(n int) []byte {
	if checked.Enabled {
		return a.borrowChecked(n)
	}
	off := a.bOff
	if uint(n) <= uint(len(a.bChunk)-off) {
		a.bOff = off + n
		return a.bChunk[off : off+n : off+n]
	}
	return a.borrowSlow(n)
}

func (a *Allocator) borrowSlow(n int) []byte {
	if n < 0 {
		panic(errNegative)
	}
	if !sysmem.Available(uint64(n)) {
		panic(fmt.Sprintf(errTooLargeFmt, "Borrow", n))
	}
	if a.bChunk != nil {
		a.bOld = append(a.bOld, a.bChunk)
	}
	var c []byte
	if checked.Enabled {
		c = a.chunkChecked(max(n, a.cfg.borrowChunk))
	} else {
		c = a.Malloc(max(n, a.cfg.borrowChunk))
	}
	a.allocs-- // a chunk is no allocation of the caller's
	a.bChunk, a.bOff = c, n
	return c[:n:n]
}

// Recycle ends every Borrow since the previous Recycle: their memory goes
// back to the allocator, but for the current chunk, which Borrow reuses
// from its start. Allocations from Malloc are not affected.
func (a *Allocator) Recycle() {
	if checked.Enabled {
		a.recycleChecked()
		return
	}
	for i, c := range a.bOld {
		a.Free(c)
		a.frees--
		a.bOld[i] = nil
	}
	a.bOld = a.bOld[:0]
	a.bOff = 0
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
		blk := &a.slots[id]
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
		blk := &a.slots[id]
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
	a.slots, a.freeSlot, a.sorted = nil, nil, nil
	a.hint, a.hintLo, a.hintHi = -1, 1, 0
	a.recent, a.nRecent, a.gain = [recentCap]span{}, 0, 0
	a.bChunk, a.bOff, a.bOld = nil, 0, nil
	a.reserved, a.heapRes, a.free, a.peak, a.hot, a.lastGrow = 0, 0, 0, 0, 0, 0
	a.publish()
}
