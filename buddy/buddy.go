package buddy

import (
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/offheap"
)

// Allocator is a binary buddy allocator over one region of memory.
//
// An Allocator is not safe for concurrent use; give each goroutine its own,
// or guard it with a mutex. Memory it handed out may be used, and freed, on
// any goroutine as long as calls on the Allocator do not overlap. The zero
// value is not usable: an Allocator must be created with [New]. It must not
// be copied.
//
// [Allocator.Alloc] and [Allocator.Free] cost a few nanoseconds in steady
// state (a list pop or push and a state byte), at worst one split or merge
// per order (O(log(size/minBlock))), and never allocate. A request is
// rounded up to a power of two of at least minBlock, so up to half of a
// block, less one byte, is lost to rounding. Bookkeeping takes 9 bytes per
// minBlock outside the region (14% of it at minBlock 64, 0.2% at 4 KiB).
// Memory is not zeroed: a block holds what its previous user wrote (a fresh
// region reads as zero; as poison in the checked build). The region lives
// on the Go heap as one pointer-free object the GC never scans, or off the
// heap [WithOffHeap].
//
// Up to 4 free blocks of an order stay unmerged (lazy merging), so that an
// Alloc+Free loop does not split and merge every order on every call; an
// Alloc that finds no block large enough first merges every free pair, so
// it fails only when no free block of the size exists even after merging.
//
// In the checked build (-tags memkitdebug) a bad Free panics with a
// *memkit.Misuse that names the mistake and the stacks of the block's
// allocation and, for a block freed before, of its first free. Freed blocks
// wait in a quarantine (4 MiB or 4096 blocks, less when an Alloc needs
// them) filled with poison, so a second Free after the memory would have
// gone to a new owner is reported at that call, and a write after free when
// the block leaves the quarantine, is handed out again or at memkit.Leaks;
// the slack after each length is filled with guard bytes checked on Free
// (free a block grown by append through the grown slice); memkit.Leaks
// lists the blocks not freed. Alloc and Free then cost about 5 µs and
// allocate: for tests and staging.
type Allocator struct {
	mem      []byte
	base     uintptr
	size     int
	minBlock int
	minShift uint
	top      int // order of the whole region

	state []uint8 // per minBlock: flag|order of a block head, 0 inside a block
	next  []int32 // free-list links, per minBlock index; -1 ends a list
	prev  []int32

	orders   []order // per order
	nonEmpty uint64  // bit k set while order k's list is not empty

	failures uint64
	badFrees uint64

	pub published // what ReadStats shows other goroutines (see stats.go)

	offHeap bool
	closed  bool

	alert *alert           // WithBudgetAlert, or nil
	tr    *checked.Tracker // checked build only
}

// order is one order's free list and counters, together so that a hot
// path touches one cache line per order.
type order struct {
	head   int32 // first free block, or -1
	nfree  int32 // free blocks on the list
	allocs uint64
	frees  uint64
	pub    orderRow // published copy of the three, for ReadStats
}

const (
	allocated = 0x80 // state: the head of a block handed out
	free      = 0x40 // state: the head of a free block
	orderMask = 0x3f

	// lazyReserve is how many free blocks an order keeps unmerged.
	lazyReserve = 4

	// bookkeeping is the bytes of state, next and prev per minBlock.
	bookkeeping = 9
)

const (
	errNegative   = "memkit/buddy: negative size"
	errDoubleFree = "memkit/buddy: double free"
	errForeign    = "memkit/buddy: foreign memory"
)

// New returns an allocator over a region of size bytes whose smallest block
// is minBlock bytes, or an error naming the invalid argument. Both must be
// powers of two, minBlock at least 8 and at most size, and size/minBlock at
// most 2^30. The region is reserved at once: on the Go heap, or off it
// [WithOffHeap]. New returns an error rather than reserve more than the
// system can provide now (the region plus 9 bytes per minBlock of
// bookkeeping on the Go heap; see internal/sysmem), and when an off-heap
// mapping is refused.
func New(size, minBlock int, opts ...Option) (*Allocator, error) {
	cfg, err := newConfig(size, minBlock, opts)
	if err != nil {
		return nil, err
	}
	n := size / minBlock
	mem, err := regionAlloc(size, cfg.offHeap)
	if err != nil {
		return nil, fmt.Errorf("memkit/buddy: region of %d bytes: %w", size, err)
	}
	top := bits.TrailingZeros(uint(n))
	a := &Allocator{
		mem:      mem,
		base:     blockAddr(mem),
		size:     size,
		minBlock: minBlock,
		minShift: uint(bits.TrailingZeros(uint(minBlock))),
		top:      top,
		state:    make([]uint8, n),
		next:     make([]int32, n),
		prev:     make([]int32, n),
		orders:   make([]order, top+1),
		offHeap:  cfg.offHeap,
	}
	for k := range a.orders {
		a.orders[k].head = -1
	}
	a.push(0, top)
	if cfg.HasAlert() {
		a.alert = &alert{edge: budget.NewEdge(cfg.Alert())}
	}
	if checked.Enabled {
		checked.Fill(mem, checked.PoisonByte)
		a.tr = checked.NewTracker("buddy")
		checked.Register(a, a.tr)
	}
	return a, nil
}

// push puts the free block at index i on order k's list.
func (a *Allocator) push(i int32, k int) {
	o := &a.orders[k]
	h := o.head
	a.next[i] = h
	a.prev[i] = -1
	if h >= 0 {
		a.prev[h] = i
	}
	o.head = i
	o.nfree++
	a.nonEmpty |= 1 << uint(k)
	a.state[i] = free | uint8(k)
}

// unlink takes the free block at index i off order k's list and clears its
// state.
func (a *Allocator) unlink(i int32, k int) {
	o := &a.orders[k]
	n, p := a.next[i], a.prev[i]
	if p >= 0 {
		a.next[p] = n
	} else {
		o.head = n
	}
	if n >= 0 {
		a.prev[n] = p
	}
	o.nfree--
	if o.head < 0 {
		a.nonEmpty &^= 1 << uint(k)
	}
	a.state[i] = 0
}

// order returns the order of a request of n bytes, 0 <= n <= size.
func (a *Allocator) order(n int) int {
	if n <= a.minBlock {
		return 0
	}
	return bits.Len(uint(n-1)) - int(a.minShift)
}

// Alloc returns a block of length n and capacity n rounded up to a power of
// two (at least minBlock). The capacity is locked, so append past it
// reallocates. Alloc(0) returns an empty block of minBlock bytes.
//
// It returns [ErrNoSpace], leaving the allocator unchanged but for
// Stats.Failures, when no free block is large enough (after merging every
// free pair), and [ErrClosed] after Close. It panics with
// "memkit/buddy: negative size" if n < 0. The block is not zeroed.
func (a *Allocator) Alloc(n int) ([]byte, error) {
	if n < 0 {
		panic(errNegative)
	}
	if n > a.size {
		return a.noSpace()
	}
	k := a.order(n)
	avail := a.nonEmpty >> uint(k)
	if avail == 0 {
		return a.allocSlow(n, k)
	}
	j := k + bits.TrailingZeros64(avail)
	i := a.orders[j].head
	a.unlink(i, j)
	for j > k { // split, keeping the lower half
		j--
		a.push(i+1<<uint(j), j)
	}
	b := a.handOut(i, k, n)
	if c := a.orders[k].allocs; c%checkEvery == 0 {
		a.maybePublish(k, c)
	}
	if checked.Enabled {
		a.checkOut(b, n)
	}
	if a.alert != nil {
		// A return of its own: with one return after the if, the
		// compiler keeps b on the stack across the call on every path.
		a.alert.add(int64(cap(b)))
		return b, nil
	}
	return b, nil
}

func (a *Allocator) handOut(i int32, k, n int) []byte {
	a.state[i] = allocated | uint8(k)
	a.orders[k].allocs++
	bsize := a.minBlock << uint(k)
	off := int(i) << a.minShift
	return a.mem[off : off+n : off+bsize]
}

// allocSlow is Alloc when no list of order k or above has a block: it
// merges every free pair and tries once more.
func (a *Allocator) allocSlow(n, k int) ([]byte, error) {
	if a.closed {
		return nil, ErrClosed
	}
	a.coalesce()
	if a.nonEmpty>>uint(k) == 0 {
		if checked.Enabled && a.releaseHeld() {
			return a.Alloc(n) // blocks held back from reuse are free now
		}
		return a.noSpace()
	}
	a.publishAll()
	return a.Alloc(n)
}

// noSpace counts a failed Alloc, publishes it and returns ErrNoSpace. Out
// of line: Alloc's fast path keeps its registers.
//
//go:noinline
func (a *Allocator) noSpace() ([]byte, error) {
	a.failures++
	a.publishAll()
	return nil, ErrNoSpace
}

// coalesce merges every pair of free buddies, from the smallest order up,
// so that merged blocks merge again at the next order. It is O(free blocks).
func (a *Allocator) coalesce() {
	for k := 0; k < a.top; k++ {
		for i := a.orders[k].head; i >= 0; {
			nxt := a.next[i]
			bud := i ^ 1<<uint(k)
			if a.state[bud] != free|uint8(k) {
				i = nxt
				continue
			}
			if nxt == bud {
				nxt = a.next[bud]
			}
			a.unlink(i, k)
			a.unlink(bud, k)
			a.push(min(i, bud), k+1)
			i = nxt
		}
	}
}

// Free returns a block from Alloc. b must start where Alloc's block started;
// its length does not matter. The whole block is freed; after Free, the
// caller must not use b or any slice of it.
//
// Free panics with "memkit/buddy: double free" if the block is already free,
// and with "memkit/buddy: foreign memory" if b does not start a block this
// allocator handed out (outside the region, inside a block, or with a
// capacity larger than its block). The checked build (see [Allocator])
// reports these and more with a *memkit.Misuse.
func (a *Allocator) Free(b []byte) {
	if checked.Enabled {
		a.freeChecked(b)
		return
	}
	off := blockAddr(b) - a.base
	if off >= uintptr(a.size) || off&uintptr(a.minBlock-1) != 0 {
		a.countBadFree()
		panic(errForeign)
	}
	i := int32(off >> a.minShift)
	st := a.state[i]
	k := int(st & orderMask)
	if st&allocated == 0 || cap(b) > a.minBlock<<uint(k) {
		a.badFree(i)
	}
	o := &a.orders[k]
	o.frees++
	a.put(i, k)
	if o.frees%checkEvery == 0 {
		a.maybePublish(k, o.frees)
	}
	a.alertFree(k)
}

// alertFree counts a block of order k given back, with WithBudgetAlert.
func (a *Allocator) alertFree(k int) {
	if a.alert != nil {
		a.alert.add(-(int64(a.minBlock) << uint(k)))
	}
}

// blockAddr is the address of the block b starts, whatever its length.
func blockAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)]))) }

// put gives the block at index i of order k back: on its order's list, or
// merged with its buddies once the list holds lazyReserve blocks.
func (a *Allocator) put(i int32, k int) {
	a.state[i] = 0
	if a.orders[k].nfree < lazyReserve {
		a.push(i, k)
	} else {
		a.merge(i, k)
	}
}

// merge puts the free block i of order k back, merged with its buddy for as
// long as the buddy is free.
func (a *Allocator) merge(i int32, k int) {
	for k < a.top {
		bud := i ^ 1<<uint(k)
		if a.state[bud] != free|uint8(k) {
			break
		}
		a.unlink(bud, k)
		i = min(i, bud)
		k++
	}
	a.push(i, k)
}

// badFree panics for a Free at block index i that is not an allocated
// block's head: a double free if i lies in a free block, foreign memory if
// it lies inside an allocated block (or the slice's capacity is larger than
// the block). It searches the orders for the block holding i: O(orders),
// paid only on the way to a panic.
func (a *Allocator) badFree(i int32) {
	a.countBadFree()
	for k := 0; k <= a.top; k++ {
		h := i &^ (1<<uint(k) - 1)
		if st := a.state[h]; st != 0 && int(st&orderMask) >= k {
			// h heads the block that holds i.
			if st&free != 0 {
				panic(errDoubleFree)
			}
			break
		}
	}
	panic(errForeign)
}

// Close gives the region back (unmapping it, for an off-heap allocator) and
// makes every later Alloc fail with [ErrClosed]. Every block handed out
// becomes invalid: with [WithOffHeap], touching one faults. Close is
// idempotent.
func (a *Allocator) Close() error {
	if a.closed {
		return nil
	}
	a.closed = true
	a.nonEmpty = 0
	if a.alert != nil {
		a.alert.add(-a.alert.used)
	}
	if checked.Enabled {
		a.tr.Flush("Close")
		a.tr.Reset()
	}
	mem := a.mem
	a.mem = nil
	a.base = ^uintptr(0) - uintptr(a.size) // every Free is now foreign
	a.freeAllAtClose()
	a.publishAll()
	if a.offHeap {
		return offheap.Free(mem)
	}
	return nil
}

// Size returns the region's size in bytes.
func (a *Allocator) Size() int { return a.size }

// MinBlock returns the smallest block size.
func (a *Allocator) MinBlock() int { return a.minBlock }

// BlockSize returns the capacity Alloc(n) returns: n rounded up to a power
// of two, at least minBlock. It panics on negative n, and returns n itself
// if n is larger than the region.
func (a *Allocator) BlockSize(n int) int {
	if n < 0 {
		panic(errNegative)
	}
	if n > a.size {
		return n
	}
	return a.minBlock << uint(a.order(n))
}
