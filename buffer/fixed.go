package buffer

import (
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
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
// Checkout and Close take one uncontended compare-and-swap and one store
// each and never allocate (a miss allocates the fresh buffer). The idle
// buffers are spread over shards, two per P (at most 64); a goroutine checks
// out from the shard its stack address hashes to, where the buffer it
// returned last most likely waits, still in cache; only when that shard is
// empty does it look at the others (so a Checkout racing with the Close of
// the last idle buffer may miss it, and count a miss). Each buffer goes
// back to its own shard, under that shard's lock, which is what makes the
// double-Close check exact even when two goroutines Close one buffer at
// once.
//
// The pool holds count×size bytes in one Go-heap allocation the GC does
// not scan, plus about 150 bytes of bookkeeping per buffer (two Buffer
// headers, see below). The memory is not zeroed between checkouts: a
// buffer's storage past its length holds what earlier users wrote.
//
// # Late use
//
// Each buffer alternates between two Buffer headers, so a Close through a
// stale *Buffer — one kept after its Close — returns [ErrClosed] even after
// the buffer was checked out again once; only after a second checkout
// does the stale header serve a new owner. Close also detaches a header's
// storage, so that a stale write lands in fresh memory rather than in the
// next user's buffer. The release build cannot tell a stale Close through
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
	size   int
	strict bool
	pool   *Pool // storage of expanded buffers
	mem    []byte
	slots  []fixedSlot
	shards []fixedShard
	mask   uintptr // len(shards) - 1

	budget *budget.Budget   // misses and expansions; nil: no limit, no alert
	track  *checked.Tracker // checked build only: the checkouts out
	held   atomic.Int64     // checked build only: closed slots in the quarantine
}

// slotGuard is the gap of guard bytes after each slot in the checked build,
// where a write past a buffer's capacity (made through unsafe) lands and
// is reported at Close.
const slotGuard = 16

// fixedSlot is one buffer of the pool. Its home shard, index & mask,
// guards its fields.
type fixedSlot struct {
	next int32   // the next idle slot in the shard's free list, or -1
	out  uint8   // 0 while idle, else 1 + the index of the header out
	flip uint8   // the header the next checkout uses
	dbg  *Buffer // checked build: the header of the last checkout, or nil
	hdr  [2]Buffer
}

// isOut reports whether b is the header through which the slot is checked
// out; the slot's home shard must be locked.
func (sl *fixedSlot) isOut(b *Buffer) bool {
	if checked.Enabled {
		return sl.out != 0 && sl.dbg == b
	}
	return sl.out != 0 && &sl.hdr[sl.out-1] == b
}

// fixedShard is a free list of the slots whose home it is, behind a
// one-word spinlock, with the counters of the operations it served.
type fixedShard struct {
	mu   shard.Lock
	top  int32 // first idle slot, or -1
	idle int32

	hits, closes         uint64
	misses, missCloses   uint64
	expansions, refusals uint64
	badCloses            uint64

	_ shard.Pad
}

// TryLock locks s if it is free, for shard.LockAny.
func (s *fixedShard) TryLock() bool { return s.mu.TryLock() }

// NewFixedPool reserves count buffers of size bytes and returns the pool,
// or an error naming the bad parameter or option, or saying that the
// system cannot give count×size bytes now (asked with one mapping given
// straight back, so that the runtime's fatal "out of memory" never ends
// the process here). It reads [WithOverflow],
// [WithBytePool] (the storage of expanded buffers, default: the default
// Pool's), [WithBudget] and [WithBudgetAlert].
func NewFixedPool(count, size int, opts ...Option) (*FixedPool, error) {
	cfg := newConfig(opts)
	stride := size
	if checked.Enabled {
		stride += slotGuard
	}
	switch {
	case count < 1 || count > 1<<31-1:
		return nil, errorf("count %d must be between 1 and 2^31-1", count)
	case size < 1:
		return nil, errorf("size %d must be at least 1", size)
	case size > maxInt/count || stride > maxInt/count || stride < size:
		return nil, errorf("count %d × size %d overflows an int", count, size)
	case cfg.setDefault:
		return nil, errorf("DefaultSize applies to a Pool only")
	case cfg.overflow != Expand && cfg.overflow != Strict:
		return nil, errorf("Overflow %d is neither Expand nor Strict", int(cfg.overflow))
	}
	if err := cfg.budgetErr(); err != nil {
		return nil, err
	}
	// The storage and the slots are two allocations the runtime would
	// end the process over if the system refused them: ask first.
	slotBytes := uint64(unsafe.Sizeof(fixedSlot{}))
	if need := uint64(count)*uint64(stride) + uint64(count)*slotBytes; need > uint64(maxInt) || !sysmem.Available(need) {
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
	n := min(shard.PerP(2, 1), 64)
	for n > count {
		n /= 2
	}
	p := &FixedPool{
		size:   size,
		strict: cfg.overflow == Strict,
		pool:   grow,
		mem:    make([]byte, count*stride),
		slots:  make([]fixedSlot, count),
		shards: make([]fixedShard, n),
		mask:   uintptr(n - 1),
	}
	if cfg.setBudget || cfg.alertFn != nil {
		p.budget = budget.New(cfg.budget, cfg.alertAt, cfg.alertFn)
	}
	if checked.Enabled {
		p.track = checked.NewTracker("buffer")
		checked.Register(p, p.track)
		p.poisonAll()
	}
	for i := range p.shards {
		p.shards[i].top = -1
	}
	for i := count - 1; i >= 0; i-- {
		for k := range p.slots[i].hdr {
			p.slots[i].hdr[k] = Buffer{pool: grow, fp: p, slot: int32(i), state: stFree}
		}
		s := &p.shards[uintptr(i)&p.mask]
		p.slots[i].next = s.top
		s.top = int32(i)
		s.idle++
	}
	return p, nil
}

// Checkout returns an empty buffer with room for the pool's size. It never
// blocks: when no buffer is idle it returns a fresh one from the heap,
// which the pool does not keep, and counts a miss. Give the buffer back
// with [Buffer.Close].
func (p *FixedPool) Checkout() *Buffer {
	// lockShard, written out to save a call.
	h := shard.Hint()
	s := &p.shards[h&p.mask]
	if !s.mu.TryLock() {
		s, h = shard.LockAny(p.shards, h)
	}
	if i := s.top; i >= 0 {
		return p.take(s, i)
	}
	s.mu.Unlock()
	return p.checkoutSlow(h, false)
}

// TryCheckout is [FixedPool.Checkout] that, when no buffer is idle and a
// fresh one would pass the pool's budget ([WithBudget]), returns nil and
// false, changing nothing but Stats.Failures, instead of making a miss.
// Without a budget it always succeeds.
func (p *FixedPool) TryCheckout() (*Buffer, bool) {
	s, h := p.lockShard()
	if i := s.top; i >= 0 {
		return p.take(s, i), true
	}
	s.mu.Unlock()
	b := p.checkoutSlow(h, true)
	return b, b != nil
}

// take pops slot i, the top of locked shard s, unlocks s and returns the
// slot's next header, ready for use.
func (p *FixedPool) take(s *fixedShard, i int32) *Buffer {
	sl := &p.slots[i]
	s.top = sl.next
	s.idle--
	s.hits++
	if checked.Enabled {
		return p.takeChecked(s, sl, i)
	}
	b := &sl.hdr[sl.flip]
	sl.out = sl.flip + 1
	sl.flip ^= 1
	s.mu.Unlock()
	// The header's pool, fp and slot never change. Close left off and
	// owned zero, but a stale write through the header since may have
	// grown it into bytepool storage (which the GC takes back): reset
	// them, or the next Close would give the slot's memory to bytepool.
	off := int(i) * p.size
	b.buf, b.off, b.owned = p.mem[off:off:off+p.size], 0, false
	return b
}

// checkoutSlow looks for an idle buffer in every shard after the home
// shard h, and makes a miss if there is none. With try, it returns nil,
// counting a failure, if the miss would pass the budget. In the checked
// build, before making a miss it lets the quarantine go (checking it), so
// that the pool misses only when every buffer is out.
func (p *FixedPool) checkoutSlow(h uintptr, try bool) *Buffer {
	if b := p.takeAny(h); b != nil {
		return b
	}
	if checked.Enabled && p.held.Load() > 0 {
		p.track.Flush("Checkout")
		if b := p.takeAny(h); b != nil {
			return b
		}
	}
	if p.budget != nil {
		if !try {
			p.budget.Charge(int64(p.size))
		} else if !p.budget.TryCharge(int64(p.size)) {
			p.countRefusal()
			return nil
		}
	}
	b := &Buffer{buf: make([]byte, 0, p.size), pool: p.pool, fp: p, slot: -1}
	p.count(func(s *fixedShard) { s.misses++ })
	if checked.Enabled {
		p.track.Alloc(b.addr(), p.size, checked.SkipWithin(pkgPath))
	}
	return b
}

// takeAny takes an idle buffer from the first shard after the home shard
// h that has one, or returns nil.
func (p *FixedPool) takeAny(h uintptr) *Buffer {
	for k := uintptr(1); k <= p.mask+1; k++ {
		s := &p.shards[(h+k)&p.mask]
		s.mu.Lock()
		if i := s.top; i >= 0 {
			return p.take(s, i)
		}
		s.mu.Unlock()
	}
	return nil
}

// close is Close and Free of a FixedPool buffer, op naming which.
func (p *FixedPool) close(b *Buffer, op string) error {
	if b.slot < 0 {
		// A miss: not the pool's, and never handed out again.
		if !atomic.CompareAndSwapUint32(&b.state, stLive, stFree) {
			p.count(func(s *fixedShard) { s.badCloses++ })
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
		p.count(func(s *fixedShard) { s.missCloses++ })
		if p.budget != nil {
			p.budget.Release(int64(charged))
		}
		return nil
	}
	s := &p.shards[uintptr(b.slot)&p.mask]
	s.mu.Lock()
	sl := &p.slots[b.slot]
	if !sl.isOut(b) {
		s.badCloses++
		s.mu.Unlock()
		return ErrClosed
	}
	sl.out = 0
	grown, owned := b.buf, b.owned
	// Detach the storage (a stale write then grows into fresh memory
	// rather than the next user's), keeping the pointer: no write barrier.
	b.buf, b.off, b.owned = b.buf[:0:0], 0, false
	s.closes++
	if checked.Enabled {
		// The slot waits in the quarantine rather than on the free list.
		b.state = stFree
		p.held.Add(1)
		s.mu.Unlock()
		p.hold(b, op)
	} else {
		sl.next = s.top
		s.top = b.slot
		s.idle++
		s.mu.Unlock()
	}
	if owned {
		p.pool.bp.Put(grown)
		if p.budget != nil {
			p.budget.Release(int64(cap(grown)))
		}
	}
	return nil
}

// push puts slot i back on its home shard's free list, from the
// quarantine (checked build).
func (p *FixedPool) push(i int32) {
	s := &p.shards[uintptr(i)&p.mask]
	s.mu.Lock()
	p.slots[i].next = s.top
	s.top = i
	s.idle++
	s.mu.Unlock()
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

func (p *FixedPool) countExpansion() { p.count(func(s *fixedShard) { s.expansions++ }) }
func (p *FixedPool) countRefusal()   { p.count(func(s *fixedShard) { s.refusals++ }) }

// count runs f on the calling goroutine's shard, locked. It serves the slow
// paths only.
func (p *FixedPool) count(f func(s *fixedShard)) {
	s, _ := p.lockShard()
	f(s)
	s.mu.Unlock()
}

// lockShard locks and returns the calling goroutine's shard, chosen by a
// hash of an address on its stack, or, if that one is busy, the next free
// one, and its hint.
func (p *FixedPool) lockShard() (*fixedShard, uintptr) {
	h := shard.Hint()
	if s := &p.shards[h&p.mask]; s.mu.TryLock() {
		return s, h
	}
	return shard.LockAny(p.shards, h)
}

// Size reports the size of the pool's buffers.
func (p *FixedPool) Size() int { return p.size }

// Cap reports the number of buffers the pool keeps.
func (p *FixedPool) Cap() int { return len(p.slots) }

// Len reports the number of idle buffers, ready for Checkout (Viki's
// Pool.Len). It locks each shard in turn.
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
	count := uint64(len(p.slots))
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

// fixedSums is the sum of the shards' counters.
type fixedSums struct {
	idleAll                          uint64
	hits, closes, misses, missCloses uint64
	expansions, refusals, badCloses  uint64
}

// sum adds up the shards' counters, locking each shard in turn.
func (p *FixedPool) sum() fixedSums {
	var t fixedSums
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		t.idleAll += uint64(s.idle)
		t.hits += s.hits
		t.closes += s.closes
		t.misses += s.misses
		t.missCloses += s.missCloses
		t.expansions += s.expansions
		t.refusals += s.refusals
		t.badCloses += s.badCloses
		s.mu.Unlock()
	}
	if checked.Enabled {
		// Closed buffers waiting in the quarantine are idle: Checkout
		// lets them go before it makes a miss.
		t.idleAll += uint64(p.held.Load())
	}
	return t
}

// sat returns a-b, or 0 if b > a (shards are read one at a time, so a
// Close may be seen before its Checkout).
func sat(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
