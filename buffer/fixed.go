package buffer

import (
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/owned"
	"github.com/memkit/memkit/internal/shard"
	"github.com/memkit/memkit/internal/sysmem"
	"github.com/memkit/memkit/stats"
)

// FixedPool is a fixed count of buffers of a fixed size, reserved up front:
// Viki's bytepool, without its silent truncation and its double Close.
//
//	pool, _ := buffer.NewFixedPool(8192, 32<<10) // 256 MiB, reserved now
//	b := pool.Checkout()
//	defer b.Close()
//	b.ReadFrom(http.MaxBytesReader(w, r.Body, 32<<10))
//
// [FixedPool.Checkout] never blocks: when every buffer is out, it hands out
// a fresh one from the heap that the pool does not keep, and counts a miss.
// A write that would pass the size follows the pool's [Overflow] policy:
// [Expand] (the default) moves the buffer to larger storage and counts an
// expansion, [Strict] refuses it with io.ErrShortWrite, writing nothing.
// Nothing is ever truncated silently. [Buffer.Close] gives a buffer back at
// its original size; a second Close returns [ErrClosed] and changes
// nothing.
//
// A FixedPool is safe for concurrent use by multiple goroutines; each
// Buffer it hands out is not (see [Buffer]). The zero value is not usable:
// a FixedPool must be created with [NewFixedPool]. It must not be copied.
//
// Checkout and Close take one uncontended compare-and-swap each, take no
// lock and never allocate (a miss allocates the fresh buffer). Each buffer
// has a state word of its own, in its entry's cache lines: an idle bit,
// and the count of its checkouts in the other bits. A goroutine checks out
// the buffer its stack address hashes to, most likely the one it returned
// last, still in cache, so that goroutines running at once work on
// different buffers' lines and the pool scales with them; only when that
// buffer is out does it look at the next ones, up to count loads (so a
// Checkout racing with the Close of the last idle buffer may miss it, and
// count a miss; a pool with every buffer out pays those loads on each
// Checkout). Two goroutines whose stacks hash to one buffer would take
// turns at it, passing its state word between their cores: after 256
// checkouts that found their buffer out, the pool changes the salt it
// mixes into the hash, which parts them with probability 1-1/count.
// Close sets the buffer's idle bit back with a compare-and-swap that
// fails when the bit is set already, which is what makes the
// double-Close check exact even when two goroutines Close one buffer at
// once.
//
// The pool holds count×size bytes in one Go-heap allocation the GC does
// not scan, plus 192 bytes of bookkeeping per buffer (its state word and
// two Buffer headers, see below). The memory is not zeroed between
// checkouts: a buffer's storage past its length holds what earlier users
// wrote.
//
// # Late use
//
// Each buffer alternates between two Buffer headers, so a Close through a
// stale *Buffer — one kept after its Close — returns [ErrClosed] even after
// the buffer was checked out again once; only after a second checkout
// does the stale header serve a new owner. The next checkout of the buffer
// detaches the closed header from its storage (and Close at once from
// expanded storage, which goes back to bytepool), so that a stale write
// lands in fresh memory rather than in the next user's buffer. The release build cannot tell a stale Close through
// a header that serves a new owner from the owner's own Close: it closes
// the owner's checkout. With the memkitdebug build tag every checkout gets
// a header of its own, every stale Close returns ErrClosed (a stale Free
// panics with a DoubleFree report), every other stale use panics, and a
// closed buffer waits, poisoned, in the tracker's bounded quarantine
// before it is checked out again (Checkout lets the quarantine go rather
// than miss), so that a write through a view kept past Close is reported
// with its stacks by the next Checkout that takes it, or by memkit.Leaks
// (see the package's "Checked build").
//
// # Budget
//
// The count×size bytes reserved at NewFixedPool are the pool's own. What
// misses and expansions take from the heap may be bounded with
// [WithBudget] and watched with [WithBudgetAlert]: at the budget an
// expansion is refused as under [Strict] and [FixedPool.TryCheckout]
// reports false; Checkout still hands out a miss.
type FixedPool struct {
	// salt is mixed into the stack hint that picks a goroutine's home
	// buffer (see home), and changed when goroutines' homes collide (see
	// takeAny). First, on the line of the fields the fast path only reads.
	salt    atomic.Uintptr
	size    int
	strict  bool
	pool    *Pool // storage of expanded buffers
	mem     []byte
	entries []fixedEntry

	// The counters of the slow paths.
	misses, missCloses, expansions, refusals, badCloses atomic.Uint64

	budget *budget.Budget   // misses and expansions; nil: no limit, no alert
	track  *checked.Tracker // checked build only: the checkouts out
	held   atomic.Int64     // checked build only: closed buffers in the quarantine
	dbgMu  shard.Lock       // checked build only: orders the Closes
}

// guardLen is the gap of guard bytes after each buffer in the checked build,
// where a write past a buffer's capacity (made through unsafe) lands and
// is reported at Close.
const guardLen = 16

// fixedEntry is one buffer of the pool. The goroutine that cleared the idle
// bit in its state word (a checkout) owns its fields until the Close that
// sets the bit again.
//
// Why two headers, and no generation that would catch every stale Close in
// the release build (issue 13): Close has one input, its receiver, and a
// *Buffer carries nothing but an address. Once both headers have served
// again (the second checkout after the one a stale *Buffer came from),
// the stale pointer is the new owner's, and all a Close can read through
// it — the header's fields, the entry's flip, the state word — is the
// same for the stale call and the owner's: no test, however cheap, can
// tell the two calls apart, and a generation kept in the header would be
// the owner's. A generation has to travel in the handle; without changing
// the API that means one header address per generation: K headers per
// buffer catch a stale Close for K-1 later checkouts at 64 bytes a header,
// no finite K catches all, and headers never reused (the checked build's)
// cost an allocation per Checkout.
type fixedEntry struct {
	// w is the buffer's state: idleBit while it is idle, and its
	// checkouts, oneCheckout each, in the other bits.
	w    atomic.Uint64
	flip uint8 // the header the next checkout uses; the other is out
	out  bool  // checked build: dbg is out
	// detours counts the checkouts that took this buffer because their
	// home was out (see takeAny); written only by the checkout's owner.
	detours uint16
	dbg     *Buffer // checked build: the header of the last checkout, or nil
	mem     []byte  // the buffer's storage, length 0, capacity the pool's size
	hdr     [2]Buffer
	// Three cache lines an entry (two on 32-bit platforms, whose headers
	// are smaller), so that neighbouring buffers' words and headers, which
	// goroutines on different Ps write, stay apart.
	_ [fixedEntryPad]byte
}

// fixedEntryPad pads a fixedEntry to a multiple of 64 bytes: its fields
// take 40 bytes and 17 pointers' worth (the word, flip and out, dbg, mem,
// and two Buffers of 6 pointers and 16 bytes each), which a test checks.
// (unsafe.Sizeof(fixedEntry{}) cannot size it: the type would refer to
// itself through Buffer.)
const fixedEntryPad = (64 - (40+17*unsafe.Sizeof(uintptr(0)))%64) % 64

// isOut reports whether b is the header through which the buffer, which its
// state word shows checked out, was checked out.
func (sl *fixedEntry) isOut(b *Buffer) bool {
	if checked.Enabled {
		return sl.out && sl.dbg == b
	}
	return &sl.hdr[(sl.flip^1)&1] == b
}

// A buffer's state word: its idle bit, and its checkouts above it.
const (
	idleBit     = 1
	oneCheckout = 2
)

// NewFixedPool reserves count buffers of size bytes and returns the pool,
// or an error naming the bad parameter or option, or saying that the
// system cannot give count×size bytes now (asked with one mapping given
// straight back, so that the runtime's fatal "out of memory" never ends
// the process here). It reads [WithOverflow],
// [WithBytePool] (the storage of expanded buffers, default: the default
// Pool's), [WithBudget] and [WithBudgetAlert].
func NewFixedPool(count, size int, opts ...FixedOption) (*FixedPool, error) {
	cfg := newConfig(opts, FixedOption.applyFixed)
	stride := size
	if checked.Enabled {
		stride += guardLen
	}
	switch {
	case count < 1 || count > 1<<31-1:
		return nil, errorf("count %d must be between 1 and 2^31-1", count)
	case size < 1:
		return nil, errorf("size %d must be at least 1", size)
	case size > maxInt/count || stride > maxInt/count || stride < size:
		return nil, errorf("count %d × size %d overflows an int", count, size)
	case cfg.overflow != Expand && cfg.overflow != Strict:
		return nil, errorf("Overflow %d is neither Expand nor Strict", int(cfg.overflow))
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	// The storage and the entries are two allocations the runtime would
	// end the process over if the system refused them: ask first.
	entryBytes := uint64(unsafe.Sizeof(fixedEntry{}))
	if need := uint64(count)*uint64(stride) + uint64(count)*entryBytes; need > uint64(maxInt) || !sysmem.Available(need) {
		return nil, errorf("count %d × size %d needs %d bytes with its bookkeeping, more than the system can give now; use fewer or smaller buffers",
			count, size, need)
	}
	grow := Default()
	if cfg.bytes != nil {
		var err error
		if grow, err = NewPool(WithBytePool(cfg.bytes)); err != nil {
			return nil, err
		}
	}
	p := &FixedPool{
		size:    size,
		strict:  cfg.overflow == Strict,
		pool:    grow,
		mem:     make([]byte, count*stride),
		entries: make([]fixedEntry, count),
	}
	p.budget = cfg.New()
	if checked.Enabled {
		p.track = checked.NewTracker("buffer")
		checked.Register(p, p.track)
		p.poisonAll()
	}
	for i := range p.entries {
		for k := range p.entries[i].hdr {
			p.entries[i].hdr[k] = Buffer{pool: grow, fp: p, index: int32(i), state: stFree}
		}
		off := i * stride
		p.entries[i].mem = p.mem[off : off : off+size]
		p.entries[i].w.Store(idleBit)
	}
	owned.Add(p.mem, "buffer.FixedPool", true)
	return p, nil
}

// Checkout returns an empty buffer with room for the pool's size. It never
// blocks: when no buffer is idle it returns a fresh one from the heap,
// which the pool does not keep, and counts a miss. Give the buffer back
// with [Buffer.Close].
func (p *FixedPool) Checkout() *Buffer {
	k := p.home()
	e := &p.entries[k]
	if w := e.w.Load(); w&idleBit != 0 && e.w.CompareAndSwap(w, w-idleBit+oneCheckout) {
		return p.take(e, int(k))
	}
	return p.checkoutSlow(k, false)
}

// home is the buffer the calling goroutine's stack address hashes to,
// under the pool's salt.
func (p *FixedPool) home() uintptr {
	return shard.HintWith(p.salt.Load()) * uintptr(len(p.entries)) >> 16
}

// respreadAfter is how many detours (checkouts whose home was out) one
// buffer takes before the pool changes its salt. Two goroutines whose
// stacks hash to one home take turns detouring, and each turn passes the
// home's state word from one core to the other: a RunParallel Checkout and
// Close of a 16-buffer pool ran 4.5x slower (30 against 6.6 ns) in two runs
// of ten, the runs whose two goroutines drew one home. A new salt parts
// them with probability 1-1/n for n buffers, within microseconds. A pool
// with more goroutines than buffers detours all the time and changes its
// salt once every respreadAfter detours of a buffer, which costs each core
// one miss on the salt's line per change.
const respreadAfter = 256

// TryCheckout is [FixedPool.Checkout] that, when no buffer is idle and a
// fresh one would pass the pool's budget ([WithBudget]), returns nil and
// false, changing nothing but Stats.Failures, instead of making a miss.
// Without a budget it always succeeds.
func (p *FixedPool) TryCheckout() (*Buffer, bool) {
	b := p.checkoutSlow(p.home(), true)
	return b, b != nil
}

// take hands out buffer i, whose entry is sl and whose bit the caller
// cleared: its next header, ready for use.
func (p *FixedPool) take(sl *fixedEntry, i int) *Buffer {
	if checked.Enabled {
		return p.takeChecked(i)
	}
	f := sl.flip & 1 // 0 or 1 already: the mask only spares a bounds check
	b := &sl.hdr[f]
	// Detach the header of the previous checkout from the storage: a
	// stale write through it then grows into fresh memory rather than
	// into this checkout's buffer (keeping the pointer: no write barrier).
	prev := &sl.hdr[f^1]
	prev.buf, prev.off = prev.buf[:0:0], 0
	sl.flip = f ^ 1
	// The header's pool, fp and index never change. Close left off zero and
	// owned false, but a stale write through the header since may have
	// grown it into bytepool storage (which the GC takes back): reset
	// them, or the next Close would give the buffer's reserved memory to bytepool.
	b.buf, b.off, b.owned, b.lastRead = sl.mem, 0, false, opInvalid
	return b
}

// checkoutSlow looks for an idle buffer among all from buffer k on, and
// makes a miss if there is none. With try, it returns nil, counting a
// failure, if the miss would pass the budget. In the checked build, before
// making a miss it lets the quarantine go (checking it), so that the pool
// misses only when every buffer is out.
func (p *FixedPool) checkoutSlow(k uintptr, try bool) *Buffer {
	if b := p.takeAny(k); b != nil {
		return b
	}
	if checked.Enabled && p.held.Load() > 0 {
		p.track.Flush("Checkout")
		if b := p.takeAny(k); b != nil {
			return b
		}
	}
	if p.budget != nil {
		if !try {
			p.budget.Charge(int64(p.size))
		} else if !p.budget.TryCharge(int64(p.size)) {
			p.refusals.Add(1)
			return nil
		}
	}
	b := &Buffer{buf: make([]byte, 0, p.size), pool: p.pool, fp: p, index: -1}
	p.misses.Add(1)
	if checked.Enabled {
		p.track.Alloc(b.addr(), p.size, checked.SkipWithin(pkgPath))
	}
	return b
}

// takeAny takes the first idle buffer from buffer k on, or returns nil.
func (p *FixedPool) takeAny(k uintptr) *Buffer {
	n := uintptr(len(p.entries))
	for j := range n {
		i := k + j
		if i >= n {
			i -= n
		}
		e := &p.entries[i]
		for w := e.w.Load(); w&idleBit != 0; w = e.w.Load() {
			if e.w.CompareAndSwap(w, w-idleBit+oneCheckout) {
				if j > 0 {
					p.detour(e)
				}
				return p.take(e, int(i))
			}
		}
	}
	return nil
}

// detour counts a checkout of e, which the caller owns, whose home was
// out, and changes the pool's salt every respreadAfter of them.
func (p *FixedPool) detour(e *fixedEntry) {
	if e.detours++; e.detours >= respreadAfter {
		e.detours = 0
		p.salt.Store(uintptr(rand.Uint64()))
	}
}

// closeFast is the release build's Close of a reserved buffer that did not
// expand, inlined into Close and Free: it reports whether it closed b.
// When it reports false it changed nothing, and close decides (a miss,
// expanded storage, a stale or second Close, or a compare-and-swap lost to
// a neighbour).
func (p *FixedPool) closeFast(b *Buffer) bool {
	// One unsigned test for both a miss (index -1) and the bounds check.
	i := uint(b.index)
	if i >= uint(len(p.entries)) || b.owned {
		return false
	}
	e := &p.entries[i]
	if &e.hdr[(e.flip^1)&1] != b {
		return false
	}
	w := e.w.Load()
	return w&idleBit == 0 && e.w.CompareAndSwap(w, w|idleBit)
}

// close is Close and Free of a FixedPool buffer, op naming which.
func (p *FixedPool) close(b *Buffer, op string) error {
	if b.index < 0 {
		return p.closeMiss(b, op)
	}
	if checked.Enabled {
		return p.closeChecked(b, op)
	}
	e := &p.entries[b.index]
	w := e.w.Load()
	if w&idleBit != 0 || !e.isOut(b) {
		p.badCloses.Add(1)
		return ErrClosed
	}
	// Expanded storage goes back to bytepool: detach it first, so that a
	// stale write cannot reach it there.
	grown := b.buf
	if !b.owned {
		grown = nil
	} else {
		b.buf, b.off, b.owned = nil, 0, false
	}
	for !e.w.CompareAndSwap(w, w|idleBit) {
		if w = e.w.Load(); w&idleBit != 0 {
			// Another Close of b won (two goroutines closed it at once).
			p.badCloses.Add(1)
			return ErrClosed
		}
	}
	if grown != nil {
		p.pool.bp.Put(grown)
		if p.budget != nil {
			p.budget.Release(int64(cap(grown)))
		}
	}
	return nil
}

// closeMiss is close of a miss: not the pool's, and never handed out again.
func (p *FixedPool) closeMiss(b *Buffer, op string) error {
	if !atomic.CompareAndSwapUint32(&b.state, stLive, stFree) {
		p.badCloses.Add(1)
		return ErrClosed
	}
	if checked.Enabled {
		b.untrack(op)
	}
	charged := p.size
	if b.owned {
		charged = cap(b.buf)
	}
	p.dropStorage(b)
	p.missCloses.Add(1)
	if p.budget != nil {
		p.budget.Release(int64(charged))
	}
	return nil
}

// push marks buffer i idle again, from the quarantine (checked build).
func (p *FixedPool) push(i int32) {
	p.entries[i].w.Or(idleBit)
	p.held.Add(-1)
}

// dropStorage detaches b's storage, returning it to bytepool if it came
// from there.
func (p *FixedPool) dropStorage(b *Buffer) {
	if b.owned {
		p.pool.bp.Put(b.buf)
	}
	b.buf, b.off, b.owned = nil, 0, false
}

func (p *FixedPool) countExpansion() { p.expansions.Add(1) }
func (p *FixedPool) countRefusal()   { p.refusals.Add(1) }

// Size reports the size of the pool's buffers.
func (p *FixedPool) Size() int { return p.size }

// Cap reports the number of buffers the pool keeps.
func (p *FixedPool) Cap() int { return len(p.entries) }

// Len reports the number of idle buffers, ready for Checkout (Viki's
// Pool.Len). It loads each buffer's state word in turn.
func (p *FixedPool) Len() int { return int(p.sum().idleAll) }

// Misses reports how many Checkouts found no idle buffer and handed out a
// fresh one (Stats.HeapFallbacks).
func (p *FixedPool) Misses() uint64 { return p.sum().misses }

// Expansions reports how many checkouts outgrew the pool's size under the
// [Expand] policy (Stats.Grows).
func (p *FixedPool) Expansions() uint64 { return p.sum().expansions }

// ReadStats fills *s with a snapshot of the pool's statistics and one class
// row for its buffers. Allocs counts Checkouts, misses included; Frees,
// accepted Closes; HeapFallbacks, misses; Grows, expansions; Failures,
// writes a [Strict] buffer refused; BadFrees, Closes that returned
// [ErrClosed]. InUseBytes and ReservedBytes count buffers at the pool's
// size (a miss's heap buffer while live included), not the larger storage
// of expanded ones, which bytepool reports. The class row covers the
// reserved buffers only. It does not allocate once s.Classes has room for
// one row.
func (p *FixedPool) ReadStats(st *stats.Stats) {
	st.Reset()
	sum := p.sum()
	idle := sum.idleAll
	size := uint64(p.size)
	count := uint64(len(p.entries))
	live := sat(sum.hits, sum.closes)
	liveMisses := sat(sum.misses, sum.missCloses)
	st.Allocs = sum.hits + sum.misses
	st.Frees = sum.closes + sum.missCloses
	st.HeapFallbacks = sum.misses
	st.Grows = sum.expansions
	st.Failures = sum.refusals
	st.BadFrees = sum.badCloses
	st.LiveObjects = live + liveMisses
	st.InUseBytes = st.LiveObjects * size
	st.ReservedBytes = (count + liveMisses) * size
	st.Classes = append(st.Classes, stats.ClassStats{
		Size:          size,
		InUseBytes:    live * size,
		ReservedBytes: count * size,
		LiveObjects:   live,
		IdleObjects:   idle,
		Allocs:        sum.hits,
		Frees:         sum.closes,
	})
}

// fixedSums is the sum of the buffers' counters.
type fixedSums struct {
	idleAll                          uint64
	hits, closes, misses, missCloses uint64
	expansions, refusals, badCloses  uint64
}

// sum adds up the buffers' counters, loading each state word in turn. A
// reserved buffer neither idle nor waiting in the quarantine is out, so
// the accepted Closes are the checkouts less those out.
func (p *FixedPool) sum() fixedSums {
	var t fixedSums
	for i := range p.entries {
		w := p.entries[i].w.Load()
		t.idleAll += w & idleBit
		t.hits += w / oneCheckout
	}
	if checked.Enabled {
		// Closed buffers waiting in the quarantine are idle: Checkout
		// lets them go before it makes a miss.
		t.idleAll += uint64(p.held.Load())
	}
	t.closes = sat(t.hits, sat(uint64(len(p.entries)), t.idleAll))
	t.misses = p.misses.Load()
	t.missCloses = p.missCloses.Load()
	t.expansions = p.expansions.Load()
	t.refusals = p.refusals.Load()
	t.badCloses = p.badCloses.Load()
	return t
}

// sat returns a-b, or 0 if b > a (words are read one at a time, so a
// Close may be seen before its Checkout).
func sat(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
