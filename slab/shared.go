package slab

import (
	"fmt"
	"math/bits"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/shard"
	"github.com/memkit/memkit/stats"
)

// Shared is an [Arena] that many goroutines use at once: the same methods,
// spread over shards so that it scales with cores instead of serializing
// on the one mutex users wrap go-slab in.
//
// A Shared is safe for concurrent use by multiple goroutines; a buffer
// allocated on one goroutine may be AddRef'd, DecRef'd and chained on any
// other. The zero value is not usable: a Shared must be created with
// [NewShared]. It must not be copied after first use.
//
// Each shard is an Arena behind its own spinlock (memkit's internal/shard).
// Alloc takes the shard its goroutine hashes to (by an address on its
// stack, so goroutines spread and each keeps hitting its own cache-warm
// shard), or the next free one if that is busy; each method on an existing
// buffer finds its shard in a copy-on-write table of slabs (one atomic load
// and a binary search over the slabs) and locks that shard. So every
// method costs what the Arena's does plus one uncontended lock and unlock
// (two atomic instructions) and, but for Alloc, the table search, which
// DecRef skips when the buffer lies in the slab of the last DecRef of the
// caller's shard. An Alloc+DecRef pair takes two locks, which is most of
// its cost: about twice a sync.Pool Get+Put, which takes none (see
// BenchmarkShared_Floor). None allocates once warm. Chains may link chunks of different shards;
// dropping a chain releases each shard in turn, never holding two locks.
//
// [Shared.ReadStats] is exact: it takes each shard's lock in turn.
//
// Memory behaves as in an Arena, per shard: each shard keeps its own slabs,
// so up to one partly used slab per class per shard, plus the idle slabs
// [WithIdleSlabs] allows per shard, is the overhead over the bytes in use.
// Memory is not zeroed.
type Shared struct {
	shards   []arenaShard
	mask     uintptr
	sizes    []int // class sizes, immutable
	slabSize int

	index    shard.Index   // live slabs and the shard of each
	badFrees atomic.Uint64 // DecRefs of buffers in no shard

	statsMu sync.Mutex
	scratch stats.Stats

	trk *checked.Tracker // the checked build's, shared by the shards; nil otherwise

	alerts *alertQueue // WithBudgetAlert's, delivered unlocked; nil for none
}

// deliverAlerts calls WithBudgetAlert's function for the crossings the
// call that returns recorded under a shard's lock: every method that may
// take or release a slab calls it last.
func (sh *Shared) deliverAlerts() {
	if q := sh.alerts; q != nil && q.pending.Load() {
		q.deliver()
	}
}

// arenaShard is one Arena and its lock, alone on its cache lines: the
// lock is memkit's one shard spinlock (internal/shard), which yields the
// processor when its holder does not let go soon.
type arenaShard struct {
	_ shard.Pad
	shard.Lock
	a *Arena
	// The base of the slab of the Arena's last lookup, published with an
	// atomic store when it changes (a slow path), for DecRef's guess.
	lastBase atomic.Uintptr
	_        shard.Pad
}

func (s *arenaShard) lock()   { s.Lock.Lock() }
func (s *arenaShard) unlock() { s.Lock.Unlock() }

// NewShared returns a goroutine-safe arena with the parameters of
// [NewArena], and the same errors; [WithShards] sets its number of shards.
// malloc, if not nil, and the function set with [WithFree] may be called
// from any goroutine that uses the arena, never from two at once for the
// same shard; they must not panic, which would leave a shard locked.
func NewShared(startChunkSize, slabSize int, growthFactor float64, malloc func(size int) []byte, opts ...Option) (*Shared, error) {
	cfg, err := configure(opts)
	if err == nil {
		err = cfg.check(startChunkSize, slabSize, growthFactor)
	}
	n := 0
	if err == nil {
		n, err = cfg.shardCount()
	}
	if err != nil {
		return nil, err
	}
	src := cfg.source(malloc)
	sh := &Shared{shards: make([]arenaShard, n), mask: uintptr(n - 1), slabSize: slabSize}
	// The shards share one budget and, in the checked build, one tracker.
	if cfg.HasAlert() {
		threshold, fn := cfg.Alert()
		sh.alerts = &alertQueue{fn: fn}
		cfg.SetAlert(threshold, sh.alerts.record)
	}
	bud := cfg.New()
	if checked.Enabled {
		sh.trk = checked.NewTracker("slab")
		checked.Register(sh, sh.trk)
	}
	shared := func(c *config) { c.bud, c.trk = bud, sh.trk }
	for k := range sh.shards {
		id := uint32(k)
		shardSrc := func(c *config) {
			c.src = func(size int) ([]byte, error) {
				mem, err := src(size)
				if err != nil || len(mem) < size {
					return mem, err // the arena refuses it
				}
				if !sh.register(uintptr(unsafe.Pointer(unsafe.SliceData(mem))), id) {
					return nil, errOverlap
				}
				return mem, nil
			}
		}
		a, err := NewArena(startChunkSize, slabSize, growthFactor, nil,
			append(opts[:len(opts):len(opts)], shardSrc, WithFree(func(mem []byte) {
				sh.unregister(uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
				if cfg.free != nil {
					cfg.free(mem)
				}
			}), shared)...)
		if err != nil {
			return nil, err
		}
		a.tag, a.numMask = id<<shardShift, 1<<shardShift-1
		a.lastBase = &sh.shards[k].lastBase
		if checked.Enabled {
			a.chk.guard = &sh.shards[k].Lock
		}
		if k > 0 {
			a.tab = sh.shards[0].a.tab // the class table is the same: share it
		}
		sh.shards[k].a = a
	}
	for c := range sh.shards[0].a.classes {
		sh.sizes = append(sh.sizes, int(sh.shards[0].a.classes[c].size))
	}
	return sh, nil
}

// shardCount returns the number of shards WithShards asks for (by
// default defaultShards), rounded up to a power of two, or an error.
func (cfg *config) shardCount() (int, error) {
	n := cfg.shards
	if n == 0 {
		n = defaultShards()
	}
	if n < 1 || n > MaxShards {
		return 0, fmt.Errorf("memkit/slab: Shards %d must be between 1 and %d", n, MaxShards)
	}
	return 1 << bits.Len(uint(n-1)), nil
}

// defaultShards is 8 shards per P, at least 16, at most MaxShards, so
// that the goroutines running at one moment rarely hash to the same shard.
// A shard takes memory (slabs) only once a goroutine allocates from it.
func defaultShards() int {
	return min(max(8*runtime.GOMAXPROCS(0), 16), MaxShards)
}

// register records that shard holds the slab at base, and reports
// whether it did: not if the slab would overlap one that a shard holds.
func (sh *Shared) register(base uintptr, shard uint32) bool {
	return sh.index.Add(base, base+uintptr(sh.slabSize), shard)
}

// unregister forgets the slab at base.
func (sh *Shared) unregister(base uintptr) { sh.index.Remove(base) }

// shardOf returns the shard whose slab holds buf's first byte, or nil.
func (sh *Shared) shardOf(buf []byte) *arenaShard {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	if p == 0 {
		return nil
	}
	o := sh.index.Find(p, p)
	if o == nil {
		return nil
	}
	return &sh.shards[o.Shard]
}

// lockBuf locks and returns the shard of buf, or panics for a buffer in no
// shard.
func (sh *Shared) lockBuf(buf []byte, isFree bool) *arenaShard {
	s := sh.shardOf(buf)
	if s == nil {
		if isFree {
			sh.badFrees.Add(1)
			if checked.Enabled {
				panic(foreignMisuse(sh.trk, "DecRef", uintptr(unsafe.Pointer(unsafe.SliceData(buf)))))
			}
		}
		panic(msgForeign)
	}
	s.lock()
	return s
}

// lockLoc locks and returns the shard l names, or panics for a stale one.
func (sh *Shared) lockLoc(l Loc) *arenaShard {
	k := l.sref() >> shardShift
	if k >= uint32(len(sh.shards)) {
		if checked.Enabled {
			panic(sh.trk.Report(callerOp(1), checked.StaleHandle, 0, nil, "a Loc of no shard of this arena"))
		}
		panic(msgStale)
	}
	s := &sh.shards[k]
	s.lock()
	return s
}

// lockAny locks the calling goroutine's shard (h, the hint of an address
// on its stack), or, when that one is busy, the next free one: any shard
// can serve an Alloc.
func (sh *Shared) lockAny(h uintptr) *arenaShard {
	if s := &sh.shards[h&sh.mask]; s.TryLock() {
		return s
	}
	s, _ := shard.LockAny(sh.shards, h)
	return s
}

// ClassSize is [Arena.ClassSize].
func (sh *Shared) ClassSize(n int) int {
	if n < 0 {
		panic(msgNegative)
	}
	if n > sh.slabSize {
		return 0
	}
	return sh.sizes[sort.SearchInts(sh.sizes, n)]
}

// Alloc is [Arena.Alloc], from the calling goroutine's shard.
func (sh *Shared) Alloc(n int) []byte {
	b, _ := sh.tryAlloc(n, shard.Hint())
	return b
}

// TryAlloc is [Arena.TryAlloc], from the calling goroutine's shard.
func (sh *Shared) TryAlloc(n int) ([]byte, error) { return sh.tryAlloc(n, shard.Hint()) }

// tryAlloc is TryAlloc from the shard of hint h, which the caller takes in
// the method the user called, as DecRef does, so that a goroutine's DecRef
// looks first in the shard its Allocs came from.
func (sh *Shared) tryAlloc(n int, h uintptr) ([]byte, error) {
	if n < 0 {
		panic(msgNegative)
	}
	s := sh.lockAny(h)
	if checked.Enabled {
		return sh.tryAllocChecked(s, n)
	}
	// The Arena's Alloc, for its inlined hot path; it leaves the reason of
	// a failure in allocErr.
	b := s.a.Alloc(n)
	var err error
	if b == nil {
		err = s.a.allocErr
	}
	s.unlock()
	if b == nil {
		b, err = sh.allocFailed(s, n, err)
	}
	sh.deliverAlerts()
	return b, err
}

// allocFailed is the end of a TryAlloc whose shard s gave nothing, for
// err, once s is unlocked: a chunk of another shard if the budget refused
// s a slab, a panic if malloc returned memory a shard holds.
func (sh *Shared) allocFailed(s *arenaShard, n int, err error) ([]byte, error) {
	switch err {
	case ErrBudget:
		return sh.allocElsewhere(s, n, err)
	case errOverlap:
		panic(msgOverlap)
	}
	return nil, err
}

// tryAllocChecked is the rest of TryAlloc in the checked build, where
// alloc panics on a write after free: it unlocks s even then. When the
// shard cannot grow, it empties the quarantine, whose chunks a release
// build would have handed out, and tries again.
func (sh *Shared) tryAllocChecked(s *arenaShard, n int) ([]byte, error) {
	alloc := func() ([]byte, error) {
		defer s.unlock()
		return s.a.alloc(n)
	}
	b, err := alloc()
	if held, _ := sh.trk.Held(); b == nil && held > 0 && (err == ErrBudget || err == ErrNoSpace) {
		sh.trk.Flush("Alloc")
		s.lock()
		s.a.failures.Add(^uint64(0)) // the first try does not count
		b, err = alloc()
	}
	if b == nil {
		b, err = sh.allocFailed(s, n, err)
	}
	sh.deliverAlerts()
	return b, err
}

// allocElsewhere is the slow path of TryAlloc when the budget refused shard
// s a new slab: it takes a free chunk of another shard, if one has any, and
// otherwise returns err.
func (sh *Shared) allocElsewhere(s *arenaShard, n int, err error) ([]byte, error) {
	for k := range sh.shards {
		o := &sh.shards[k]
		if o == s {
			continue
		}
		b := func() []byte {
			o.lock()
			defer o.unlock()
			return o.a.allocHeld(n)
		}()
		if b != nil {
			s.lock()
			s.a.failures.Add(^uint64(0)) // the call did not fail after all
			s.unlock()
			return b, nil
		}
	}
	return nil, err
}

// Owns is [Arena.Owns].
func (sh *Shared) Owns(buf []byte) bool {
	s := sh.shardOf(buf)
	if s == nil {
		return false
	}
	s.lock()
	ok := s.a.Owns(buf)
	s.unlock()
	return ok
}

// AddRef is [Arena.AddRef].
func (sh *Shared) AddRef(buf []byte) {
	s := sh.lockBuf(buf, false)
	defer s.unlock()
	s.a.AddRef(buf)
}

// DecRef is [Arena.DecRef]. When it frees a chain, it releases the chunks
// of each shard in turn.
func (sh *Shared) DecRef(buf []byte) bool {
	// The guess: a buffer freed by the goroutine that allocated it lies in
	// that goroutine's shard, most likely in the slab of its last DecRef.
	// The shard's lock makes the guess certain or sends DecRef the long
	// way, through the table of slabs.
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	s := &sh.shards[shard.Hint()&sh.mask]
	if p-s.lastBase.Load() >= uintptr(sh.slabSize) || !sh.lockIfLast(s, p) {
		s = sh.lockBuf(buf, true)
	}
	var h Loc
	last, chained := sh.decRef(s, buf, &h)
	if chained {
		sh.release(h)
	}
	sh.deliverAlerts()
	return last
}

// lockIfLast locks s and reports whether p lies in the slab of its
// Arena's last lookup, and so in s; if not, it unlocks s.
func (sh *Shared) lockIfLast(s *arenaShard, p uintptr) bool {
	s.lock()
	if l := s.a.last; l != nil && p-l.base < uintptr(sh.slabSize) {
		return true
	}
	s.unlock()
	return false
}

// decRef is the part of DecRef under the shard's lock, which it releases
// even when the Arena panics. When the DecRef dropped a chain reference to
// a successor in another shard, decRef sets *h to it and reports chained,
// for the caller to release next; otherwise it leaves *h alone. Returning
// that 20-byte Loc as a result instead made every DecRef copy it through
// the stack in overlapping 16-byte moves, and the loads that could not be
// forwarded from those stores took a quarter of Shared's Alloc+DecRef time.
func (sh *Shared) decRef(s *arenaShard, buf []byte, h *Loc) (last, chained bool) {
	defer sh.unlockHeld(s)
	last = s.a.DecRef(buf)
	return last, s.a.moveHandoff(h)
}

// unlockHeld unlocks shard s after a call that may have freed chunks and,
// in the checked build, hands them to the quarantine, which must not be
// done under the lock: the quarantine may release chunks of any shard.
func (sh *Shared) unlockHeld(s *arenaShard) {
	if checked.Enabled {
		sh.unlockHold(s)
		return
	}
	s.unlock()
}

// unlockHold is unlockHeld in the checked build.
func (sh *Shared) unlockHold(s *arenaShard) {
	held := s.a.takePending()
	s.unlock()
	for _, h := range held {
		s.a.hold(h)
	}
}

// release drops the chain reference to h and, as long as that frees a
// chunk whose successor is in another shard, to that successor.
func (sh *Shared) release(h Loc) {
	for !h.IsNil() {
		h = sh.releaseOne(h)
	}
}

// releaseOne drops the chain reference to h and returns the successor in
// another shard whose reference that dropped in turn, if any. It unlocks
// the shard even when the Arena panics on a stale link.
func (sh *Shared) releaseOne(h Loc) Loc {
	s := sh.lockLoc(h)
	defer sh.unlockHeld(s)
	s.a.unchain(h)
	return s.a.takeHandoff()
}

// BufToLoc is [Arena.BufToLoc]; the Loc also names the shard.
func (sh *Shared) BufToLoc(buf []byte) Loc {
	s := sh.lockBuf(buf, false)
	defer s.unlock()
	return s.a.BufToLoc(buf)
}

// LocToBuf is [Arena.LocToBuf].
func (sh *Shared) LocToBuf(l Loc) []byte {
	if l.IsNil() {
		return nil
	}
	s := sh.lockLoc(l)
	defer s.unlock()
	return s.a.LocToBuf(l)
}

// LocAddRef is [Arena.LocAddRef].
func (sh *Shared) LocAddRef(l Loc) {
	if l.IsNil() {
		return
	}
	s := sh.lockLoc(l)
	defer s.unlock()
	s.a.LocAddRef(l)
}

// LocDecRef is [Arena.LocDecRef].
func (sh *Shared) LocDecRef(l Loc) bool {
	if l.IsNil() {
		return false
	}
	s := sh.lockLoc(l)
	var h Loc
	last, chained := sh.locDecRef(s, l, &h)
	if chained {
		sh.release(h)
	}
	sh.deliverAlerts()
	return last
}

// locDecRef is the part of LocDecRef under the shard's lock, as decRef is
// DecRef's.
func (sh *Shared) locDecRef(s *arenaShard, l Loc, h *Loc) (last, chained bool) {
	defer sh.unlockHeld(s)
	last = s.a.LocDecRef(l)
	return last, s.a.moveHandoff(h)
}

// SetNext is [Arena.SetNext]; buf and next may be in different shards.
// Changing the successor of a chunk while another goroutine frees it is a
// race of the caller's.
func (sh *Shared) SetNext(buf, next []byte) {
	sh.nextLoc(buf, "SetNext") // checks that buf is live before next gains a reference
	var nl Loc
	var off, n uint32
	if next != nil {
		s := sh.lockBuf(next, false)
		func() {
			defer s.unlock()
			nl = s.a.BufToLoc(next)
			s.a.chainRef(nl)
			off, n = spanOf(s.a.LocToBuf(nl), next)
		}()
	}
	s := sh.lockBuf(buf, false)
	var old Loc
	func() {
		defer s.unlock()
		old = s.a.swapNext(buf, nl, off, n)
	}()
	sh.release(old)
	sh.deliverAlerts()
}

// GetNext is [Arena.GetNext].
func (sh *Shared) GetNext(buf []byte) []byte {
	l, off, n := sh.nextSpan(buf, "GetNext")
	if l.IsNil() {
		return nil
	}
	s := sh.lockLoc(l)
	defer s.unlock()
	s.a.LocAddRef(l)
	return s.a.LocToBuf(l)[off : off+n : off+n]
}

// NextSpan is [Arena.NextSpan].
func (sh *Shared) NextSpan(buf []byte) (next Loc, off, n int) {
	l, o, k := sh.nextSpan(buf, "NextSpan")
	return l, int(o), int(k)
}

// nextSpan is NextSpan for op, the method whose misuse it reports.
func (sh *Shared) nextSpan(buf []byte, op string) (Loc, uint32, uint32) {
	s := sh.lockBuf(buf, false)
	defer s.unlock()
	return s.a.nextSpan(buf, op)
}

// NextLoc is [Arena.NextLoc].
func (sh *Shared) NextLoc(buf []byte) Loc { return sh.nextLoc(buf, "NextLoc") }

// nextLoc is NextLoc for op, the method whose misuse it reports.
func (sh *Shared) nextLoc(buf []byte, op string) Loc {
	s := sh.lockBuf(buf, false)
	defer s.unlock()
	return s.a.nextLoc(buf, op)
}

// ReadStats is [Arena.ReadStats], summed over the shards, with a row per
// chunk class. It may be called from any goroutine, and its figures are
// exact: it takes each shard's lock in turn, so the snapshot is consistent
// per shard, not across shards. It does not allocate once st.Classes has
// room for every class.
func (sh *Shared) ReadStats(st *stats.Stats) {
	sh.statsMu.Lock()
	defer sh.statsMu.Unlock()
	for k := range sh.shards {
		s := &sh.shards[k]
		dst := st
		if k > 0 {
			dst = &sh.scratch
		}
		s.lock()
		s.a.readStats(dst, true)
		s.unlock()
		if k > 0 {
			st.Add(&sh.scratch)
		}
	}
	st.BadFrees += sh.badFrees.Load()
}

// Shards returns the number of shards.
func (sh *Shared) Shards() int { return len(sh.shards) }
