package slab

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/internal/shard"
	"github.com/memkit/memkit/stats"
)

// Shared is an [Arena] that many goroutines use at once: the same methods,
// with Alloc and DecRef that take no lock and no locked instruction once
// warm, so that it scales with cores instead of serializing on the one
// mutex users wrap go-slab in.
//
// A Shared is safe for concurrent use by multiple goroutines; a buffer
// allocated on one goroutine may be AddRef'd, DecRef'd and chained on any
// other. The zero value is not usable: a Shared must be created with
// [NewShared]. It must not be copied after first use.
//
// Chunks are carved from slabs by shards, each an Arena behind its own
// spinlock (memkit's internal/shard). Once handed out, a chunk belongs to
// its class's idle set (internal/shard's Idle): a chunk free again waits
// there, as a ticket in a sync.Pool, for the next Alloc of its class. So a
// warm Alloc is a sync.Pool Get and a few plain stores, and a DecRef of a
// chunk's last reference finds the chunk's slab in a copy-on-write hash
// table (an atomic load, a plain one on amd64, a shift, a mask and one
// compare, which also tells that no chain touches the slab), checks its
// count and puts its ticket back: on amd64 neither takes a locked
// instruction, where a sync.Pool Get+Put takes none either. Together they
// cost about 1.35 times a sync.Pool Get+Put of a buffer on one goroutine
// and about 1.2 times on every P at once, in 246 instructions against its
// 116 (see BenchmarkShared_AllocDecRef). An Alloc whose class has no idle
// chunk takes a shard's lock and carves up to 16 chunks at once. None
// allocates once warm (a chunk's first use makes its ticket).
//
// A second holder's [Shared.AddRef] and DecRef, and [Shared.AddRefN], which
// hands a buffer to n more holders at once, take one atomic add each and
// no lock, on chunks of slabs that no chain touches: on amd64 an AddRef
// runs 37 instructions and a DecRef that leaves references 40, the lock
// prefix included (callgrind, BenchmarkShared_AddRefDecRef), about 1.15
// times the time of an atomic counter's Add and Add(-1) together. The other methods,
// and any call on a chunk of a slab one of whose chunks was chained, take
// the lock of the chunk's shard, as an Arena behind a mutex would: one
// uncontended spinlock each, two locked instructions. Chains may link
// chunks of different shards; dropping a chain releases each shard in
// turn, never holding two locks.
//
// A DecRef of a chunk already free panics, as an Arena's does, when it
// comes after the first: the count it reads is zero. Two DecRefs of a
// chunk's last reference made at the same instant by two goroutines (a
// double free racing itself) may both pass, in the few instructions
// between one's load of the count and its store, and the chunk is then
// handed out twice; the race detector may report them, and the checked
// build (-tags memkitdebug), where every DecRef takes the lock, catches
// them.
//
// [Shared.ReadStats] may be called from any goroutine. Grows, Releases,
// ReservedBytes, Failures and BadFrees are exact; so is LiveObjects once
// the goroutines that Alloc and DecRef pause, and so are Allocs and Frees,
// which the lock-free paths count per chunk with plain stores and
// ReadStats sums (O(chunks)): while goroutines work the sums may be low by
// the frees in flight, never high, and never less than a previous
// ReadStats reported. InUseBytes never exceeds ReservedBytes and no
// figure is negative.
//
// Memory behaves as in an Arena, per shard, except for the idle sets: a
// chunk freed on the lock-free path stays its class's until a GC finds it
// idle. A sync.Pool drops what it held across two GCs, and after each GC
// the Shared gives the chunks whose tickets were dropped back to their
// slabs, so a chunk idle since a GC is back in its slab by the end of the
// third GC after its free, and a slab all of whose chunks are back is
// released as an Arena's is (see [WithIdleSlabs]). Until then a class's
// idle chunks serve only that class: under [WithBudget], an Alloc of
// another class may fail with [ErrBudget] while slabs of idle chunks wait
// for the GC. Under the race detector the idle sets keep their chunks on a
// locked stack instead of a sync.Pool, and never give them back. Besides
// the Arena's bookkeeping a chunk costs 32 bytes of record and, once used,
// a 16-byte ticket and its cleanup record on the Go heap. Memory is not
// zeroed.
//
// The functions of [WithFree], [WithBudgetAlert] and NewShared's malloc may
// run on any goroutine that uses the arena, and those of WithFree and
// WithBudgetAlert also on the runtime's cleanup goroutine after a GC.
type Shared struct {
	shards   []arenaShard
	mask     uintptr
	sizes    []int    // class sizes, immutable
	tab      []uint16 // the shards' class table, shared and immutable
	tabMax   int
	slabSize int

	// fronts holds each class's idle set (nil in the checked build, where
	// every call takes a shard's lock).
	fronts []*shard.Idle

	index    []slabOwner    // live slabs by base address, under indexMu
	indexMu  sync.Mutex     // serializes index and table updates
	table    unsafe.Pointer // *slabTable: the adopted slabs by address, copy-on-write; see loadTable
	badFrees atomic.Uint64  // DecRefs of buffers in no shard

	statsMu sync.Mutex
	scratch stats.Stats
	// ReadStats's counts of the idle sets' chunks, by class: out of the
	// sets, and frees into them; and the highest Allocs and Frees it
	// reported, which it never reports less of.
	outs, frees []uint64
	seen        []stats.ClassStats

	sweepMu sync.Mutex
	keys    []uintptr // the sweep's scratch

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

// slabOwner is an entry of Shared.index: which shard holds the slab at
// base, and the slab once its shard made it.
type slabOwner struct {
	base  uintptr
	shard uint32
	s     *slab
}

// slabTable finds the slab that holds an address in a few instructions:
// an open-addressing hash table of granules, aligned runs of 2^shift
// bytes, 2^shift at most the slab size, so that at most two slabs meet in
// a granule (and a slab spans at most three). A granule's entry is its
// number & mask or, when that is taken, the next free one: a slab's
// granules are consecutive numbers, so their low bits spread them. It is
// built anew from the index whenever a slab comes or goes, and read
// without a lock.
type slabTable struct {
	shift uint    // a granule's number is p >> shift
	mask  uintptr // the number of entries, a power of two, less one
	heads []*slab // each entry's first slab, for hit: 8 bytes apart, an index register's scale
	size  uintptr // the slab size
	ents  []granule
}

// granule is an entry of a slabTable: a granule's number plus one (0 for
// an empty entry) and the slabs that meet in it; an empty entry's first
// slab is closedSlab, for hit.
type granule struct {
	g    uintptr
	a, b *slab
	_    uintptr // 32 bytes on 64-bit platforms: an entry's offset is a shift
}

// closedSlab is the first slab of a slabTable's empty entries: its open
// span is empty, so hit finds no address in it.
var closedSlab slab

// newSlabTable returns the table of the adopted slabs of idx.
func newSlabTable(idx []slabOwner, slabSize int) *slabTable {
	t := &slabTable{shift: uint(bits.Len(uint(slabSize)) - 1), size: uintptr(slabSize)}
	n := 0
	for _, o := range idx {
		if o.s != nil {
			n += 3
		}
	}
	b := uint(3)
	for 1<<b < 2*n {
		b++
	}
	t.mask = 1<<b - 1
	t.ents = make([]granule, 1<<b)
	for _, o := range idx {
		if o.s == nil {
			continue
		}
		for g := o.base >> t.shift; g <= (o.base+t.size-1)>>t.shift; g++ {
			e := t.entry(g)
			e.g = g + 1
			if e.a == nil {
				e.a = o.s
			} else {
				e.b = o.s
			}
		}
	}
	t.heads = make([]*slab, len(t.ents))
	for i := range t.ents {
		if t.ents[i].a == nil {
			t.ents[i].a = &closedSlab
		}
		t.heads[i] = t.ents[i].a
	}
	return t
}

// at returns entry i, i <= t.mask, without a bounds check.
func (t *slabTable) at(i uintptr) *granule {
	return (*granule)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(t.ents)), i*unsafe.Sizeof(granule{})))
}

// entry returns the entry of granule g, or the empty one where it would
// go.
func (t *slabTable) entry(g uintptr) *granule {
	for i := g & t.mask; ; i = (i + 1) & t.mask {
		if e := t.at(i); e.g == g+1 || e.g == 0 {
			return e
		}
	}
}

// find returns the slab of entry e that holds address p, or nil.
func (t *slabTable) find(e *granule, p uintptr) *slab {
	if e.g == 0 {
		return nil
	}
	if s := e.a; p-s.base < t.size {
		return s
	}
	if s := e.b; s != nil && p-s.base < t.size {
		return s
	}
	return nil
}

// loadTable returns the table of the adopted slabs. Shared.table is an
// unsafe.Pointer rather than an atomic.Pointer so that AddRef and DecRef
// can load it with the atomic.LoadPointer intrinsic on the line that uses
// it: an inlined method call with no instruction of its own on its line
// costs a no-op where it was inlined.
func (sh *Shared) loadTable() *slabTable { return (*slabTable)(atomic.LoadPointer(&sh.table)) }

// storeTable publishes t as the table of the adopted slabs.
func (sh *Shared) storeTable(t *slabTable) { atomic.StorePointer(&sh.table, unsafe.Pointer(t)) }

// slabAt returns the adopted slab that holds address p, or nil.
func (sh *Shared) slabAt(p uintptr) *slab {
	t := sh.loadTable()
	return t.find(t.entry(p>>(t.shift&63)), p)
}

// hit returns the first slab of the entry that p's granule tries first:
// that slab holds p in the span the calls that look up p first may use
// if p-s.base < s.hitSpan(), the usual case. Either way s is not nil (an
// empty entry's is closedSlab). Whichever granule the entry is of, a slab
// that holds p is p's slab, so the compare is the whole test: hit is a
// shift, a mask and a load, and inlines.
func (t *slabTable) hit(p uintptr) *slab {
	return *(**slab)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(t.heads)), p>>(t.shift&63)&t.mask*unsafe.Sizeof((*slab)(nil))))
}

// openAt is hit for any address: the adopted slab that holds p in its
// open span, and p's offset in it, or nil.
//
// The lock-free paths of AddRef, AddRefN and DecRef find a buffer's slab
// with hit and, when it misses, openAt: a slab whose chunks' counts change
// only by atomic adds and by their last holders' stores, since no chain
// touches them; and the chunk with inChunk. Every call they do not serve
// goes to the locked path, which checks the buffer from scratch.
func (sh *Shared) openAt(p uintptr) (*slab, uintptr) {
	if s := sh.slabAt(p); s != nil && p-s.base < s.openSpan() {
		return s, p - s.base
	}
	return nil, 0
}

// inChunk returns the chunk of s that holds offset off, which lies in its
// open span, and reports whether the n bytes from off lie inside it.
func (s *slab) inChunk(off uintptr, n int) (int32, bool) {
	o := uint32(off) // below the open span: under 2^30
	i := s.chunkIndex(o)
	return int32(i), uint64(o-i*uint32(s.size))+uint64(n) <= uint64(s.size)
}

// hitChunk is inChunk below the hit span of s (see fastSpan), with the
// chunk's bookkeeping: a multiply and a shift, where inChunk's reciprocal
// takes the high word of a 128-bit product and the registers that go
// with it. The chunk's end bounds the buffer's, whose capacity n is any
// int: off+n cannot overflow.
func (s *slab) hitChunk(off uintptr, n int) (ch *chunk, i uintptr, ok bool) {
	i = uintptr(uint64(off) * s.magic >> 32)
	ch = (*chunk)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.chunks)), i*unsafe.Sizeof(chunk{})))
	return ch, i, uint64(off)+uint64(n) <= uint64(i+1)*uint64(s.size)
}

// openChunk is hitChunk for an offset in the open span of s.
func (s *slab) openChunk(off uintptr, n int) (*chunk, uintptr, bool) {
	i, ok := s.inChunk(off, n)
	return s.chunkAt(i), uintptr(i), ok
}

// frontChunk is a chunk's record in its class's idle set: the set's slot,
// and where the chunk is. The set's key of a chunk is the address of its
// record, kept alive by the slab, which no release takes while the set
// holds its chunks.
type frontChunk struct {
	slot shard.Slot // first: a ticket's slot is its record
	s    *slab
	i    int32
	// The chunk's frees back into the set, written by the goroutine that
	// freed it once its slot is empty; ReadStats reads it without a lock.
	frees uint32
}

// countFree counts a free of f's chunk, whose slot the caller emptied: a
// plain increment, atomic under the race detector, which would report
// ReadStats's load beside it.
func (f *frontChunk) countFree() {
	if race.Enabled {
		atomic.AddUint32(&f.frees, 1)
		return
	}
	f.frees++
}

// frontKey returns the idle-set key of chunk i of s.
func (s *slab) frontKey(i int32) uintptr { return uintptr(unsafe.Pointer(&s.front[i])) }

// frontOf returns the record whose address is key. The key is a
// uintptr in the idle set, so the pointer is read back from its bits: the
// record is on the Go heap, which does not move.
func frontOf(key uintptr) *frontChunk {
	return (*frontChunk)(*(*unsafe.Pointer)(unsafe.Pointer(&key)))
}

// toIdle gives the ticket of chunk i of s, free now, back to the class's
// idle set, and reports whether it had one: a chunk that a shard handed
// out directly (a test's) goes on its slab's free list instead.
func (s *slab) toIdle(i int32) bool {
	f := &s.front[i]
	t := f.slot.Take()
	if t == nil {
		return false
	}
	f.countFree()
	s.idle.Put(t)
	return true
}

// arenaShard is one Arena and its lock, alone on its cache lines: the
// lock is memkit's one shard spinlock (internal/shard), which yields the
// processor when its holder does not let go soon.
type arenaShard struct {
	_ shard.Pad
	shard.Lock
	a *Arena
	_ shard.Pad
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
	sh.storeTable(newSlabTable(nil, slabSize))
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
		a.onGrow = func(s *slab, c int) { sh.adopt(s, c, id) }
		a.atomicRefs = !checked.Enabled // the release build's AddRef and DecRef take no lock
		if checked.Enabled {
			a.chk.guard = &sh.shards[k].Lock
		}
		if k > 0 {
			a.tab = sh.shards[0].a.tab // the class table is the same: share it
		}
		sh.shards[k].a = a
	}
	a0 := sh.shards[0].a
	for c := range a0.classes {
		sh.sizes = append(sh.sizes, int(a0.classes[c].size))
	}
	sh.tab, sh.tabMax = a0.tab, a0.tabMax
	if !checked.Enabled {
		sh.fronts = make([]*shard.Idle, len(sh.sizes))
		for c := range sh.fronts {
			sh.fronts[c] = shard.NewIdle(func(key uintptr) *shard.Slot { return &frontOf(key).slot })
		}
		sh.outs = make([]uint64, len(sh.sizes))
		sh.frees = make([]uint64, len(sh.sizes))
		sh.seen = make([]stats.ClassStats, len(sh.sizes))
		shard.AfterEachGC(weak.Make(sh), (*Shared).sweep) // gives back what the GC found idle
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
	sh.indexMu.Lock()
	defer sh.indexMu.Unlock()
	old := sh.index
	i := sort.Search(len(old), func(i int) bool { return old[i].base > base })
	size := uintptr(sh.slabSize)
	if i > 0 && base-old[i-1].base < size || i < len(old) && old[i].base-base < size {
		return false
	}
	sh.index = slices.Insert(old, i, slabOwner{base, shard, nil})
	return true
}

// adopt is called by shard k's arena, under its lock, with every slab s
// it takes for class c: it gives the slab's chunks their records in the
// class's idle set and publishes s in the table, for the methods that
// find a buffer's slab without a lock.
func (sh *Shared) adopt(s *slab, c int, k uint32) {
	s.owner = k
	if sh.fronts != nil {
		s.idle = sh.fronts[c]
		s.front = make([]frontChunk, len(s.chunks))
		for i := range s.front {
			s.front[i].s, s.front[i].i = s, int32(i)
		}
	}
	sh.indexMu.Lock()
	defer sh.indexMu.Unlock()
	i := sort.Search(len(sh.index), func(i int) bool { return sh.index[i].base >= s.base })
	sh.index[i].s = s
	sh.storeTable(newSlabTable(sh.index, sh.slabSize))
}

// unregister forgets the slab at base.
func (sh *Shared) unregister(base uintptr) {
	sh.indexMu.Lock()
	defer sh.indexMu.Unlock()
	i := sort.Search(len(sh.index), func(i int) bool { return sh.index[i].base >= base })
	if i == len(sh.index) || sh.index[i].base != base {
		return
	}
	sh.index = slices.Delete(sh.index, i, i+1)
	sh.storeTable(newSlabTable(sh.index, sh.slabSize))
}

// shardOf returns the shard whose slab holds buf's first byte, or nil.
func (sh *Shared) shardOf(buf []byte) *arenaShard {
	s := sh.slabAt(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	if s == nil {
		return nil
	}
	return &sh.shards[s.owner]
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
	return sh.sizes[sh.classOf(n)]
}

// classOf returns the class of a request of n bytes, 0 <= n <= slabSize.
func (sh *Shared) classOf(n int) int {
	if n <= sh.tabMax {
		return int(sh.tab[(n+7)>>3])
	}
	return sort.SearchInts(sh.sizes, n)
}

// Alloc is [Arena.Alloc]. Warm, it takes an idle chunk of its class: a
// sync.Pool Get and a few stores, no lock.
func (sh *Shared) Alloc(n int) []byte {
	if uint(n) <= uint(sh.tabMax) && !checked.Enabled {
		c := *(*uint16)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(sh.tab)), uintptr(n+7)>>3*2))
		x := *(**shard.Idle)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(sh.fronts)), uintptr(c)*unsafe.Sizeof(sh.fronts[0]))) // sh.fronts[c]: a class of the table is a class
		if t := x.Get(); t != nil {
			return handOut(t, n)
		}
	}
	b, _ := sh.tryAlloc(n, shard.Hint())
	return b
}

// TryAlloc is [Arena.TryAlloc].
func (sh *Shared) TryAlloc(n int) ([]byte, error) { return sh.tryAlloc(n, shard.Hint()) }

// handOut gives the chunk of ticket t, which its idle set just handed
// over, to a request of n bytes: one reference, length and capacity n.
func handOut(t *shard.Ticket, n int) []byte {
	f := frontOf(t.Key())
	s, i := f.s, f.i
	ch, p := s.chunkAt(i), s.chunkPtr(i) // before the stores, which might alias f and s
	ch.setRefs(1)
	ch.size = uint32(n)
	return (*[MaxSlabSize]byte)(p)[:n:n] // n <= the class size: no check beyond the bound's
}

// tryAlloc is TryAlloc, carving from the shard of hint h when the class
// has no idle chunk.
func (sh *Shared) tryAlloc(n int, h uintptr) ([]byte, error) {
	if n < 0 {
		panic(msgNegative)
	}
	if checked.Enabled || n > sh.slabSize {
		return sh.allocLocked(n, h)
	}
	c := sh.classOf(n)
	for {
		if t := sh.fronts[c].Get(); t != nil {
			return handOut(t, n), nil
		}
		if err := sh.refill(c, h); err != nil {
			return nil, err
		}
	}
}

// refillBatch is how many chunks an Alloc that finds its class's idle set
// empty carves at once, under one lock.
const refillBatch = 16

// refillStride is how many chunk headers share a cache line: the stride
// of the order in which a refill makes its chunks idle.
const refillStride = 64 / int(unsafe.Sizeof(chunk{}))

// refill carves up to refillBatch free chunks of class c, from the shard of
// hint h or, when the budget refuses it a slab, from another shard's
// slabs, and makes them idle in the class's set. It returns the error of
// the Alloc that could not be served.
func (sh *Shared) refill(c int, h uintptr) error {
	var keys [refillBatch]uintptr
	s := sh.lockAny(h)
	k, err := s.a.carve(c, keys[:], true)
	s.unlock()
	if err == errOverlap {
		panic(msgOverlap)
	}
	if k == 0 && err == ErrBudget {
		k = sh.carveElsewhere(s, c, keys[:])
	}
	// The set hands out what was added last first: chunks 0, 4, 8, ...,
	// then 1, 5, 9, ..., so that the chunks that goroutines on different
	// Ps take at first (and then keep reusing, each from its P's cache) do
	// not share their headers' cache lines.
	for r := refillStride - 1; r >= 0; r-- {
		for j := (k-1-r)/refillStride*refillStride + r; j >= r && j < k; j -= refillStride {
			sh.fronts[c].Add(keys[j])
		}
	}
	sh.deliverAlerts()
	if k == 0 {
		return err
	}
	return nil
}

// carveElsewhere carves free chunks of class c from the slabs of any shard
// but s, whose budget refused it a slab, into keys, and returns how many.
func (sh *Shared) carveElsewhere(s *arenaShard, c int, keys []uintptr) int {
	for k := range sh.shards {
		o := &sh.shards[k]
		if o == s {
			continue
		}
		o.lock()
		n, _ := o.a.carve(c, keys, false)
		o.unlock()
		if n > 0 {
			s.lock()
			s.a.failures.Add(^uint64(0)) // the call did not fail after all
			s.unlock()
			return n
		}
	}
	return 0
}

// carve takes up to len(keys) chunks of class c, from its slabs' free
// lists or fresh, for the class's idle set of a Shared, and stores their
// keys in keys; with grow it takes a slab when the class has none with a
// free chunk. It returns how many it took and, when none, why (a failure
// it counts).
func (a *Arena) carve(c int, keys []uintptr, grow bool) (int, error) {
	cl := &a.classes[c]
	k := 0
	for ; k < len(keys); k++ {
		s := cl.head
		if s == nil {
			if !grow || k > 0 {
				break
			}
			var err error
			if s, err = a.grow(c); s == nil {
				a.failures.Add(1)
				return 0, err
			}
		}
		i := a.takeFrom(cl, s, int(cl.size))
		s.chunkAt(i).setRefs(0) // idle, the set's
		cl.carved++
		keys[k] = s.frontKey(i)
	}
	return k, nil
}

// reclaim puts chunk i of s, idle in its class's set, which gave it up,
// back on its slab's free list, and releases the slab if that empties it
// and its class holds enough empty slabs.
func (a *Arena) reclaim(s *slab, i int32) {
	cl := s.cl
	cl.drained++
	f := &s.front[i]
	cl.setFrees += uint64(f.frees) // the chunk's count restarts if it is carved again
	f.frees = 0
	cl.frees++
	cl.publish()
	if a.pushFree(s, s.chunkAt(i), i) {
		a.slabChanged(cl, s)
	}
}

// allocLocked is TryAlloc on the shard of hint h, under its lock, for the
// checked build and for requests larger than a slab.
func (sh *Shared) allocLocked(n int, h uintptr) ([]byte, error) {
	s := sh.lockAny(h)
	if checked.Enabled {
		return sh.tryAllocChecked(s, n)
	}
	b, err := s.a.alloc(n)
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

// AddRef is [Arena.AddRef]. On a chunk of a slab that no chain touches it
// takes no lock: one atomic add.
//
//go:nosplit
func (sh *Shared) AddRef(buf []byte) {
	if !checked.Enabled {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
		s := (*slabTable)(atomic.LoadPointer(&sh.table)).hit(p)
		if off := p - s.base; off < s.hitSpan() {
			if ch, _, ok := s.hitChunk(off, cap(buf)); ok {
				// The count was in [1, math.MaxInt32) if it is above 1 now.
				if atomic.AddInt32(&ch.refs, 1) > 1 {
					return
				}
				atomic.AddInt32(&ch.refs, -1) // a free chunk, or the count's limit: the locked path panics
			}
		}
	}
	sh.addRefSlow(buf[:0]) // see addRefSlow
}

// addRefSlow is AddRef for the calls that hit does not serve: a slab that
// the table's first entry for the address does not hold, or misuse, which
// the locked path panics on. One call site keeps AddRef's registers free,
// and so does buf's length, which no lookup reads (only its address and
// capacity): AddRef passes it as 0, and the register that held it serves
// the table's variable shift.
func (sh *Shared) addRefSlow(buf []byte) {
	if !checked.Enabled && sh.tryAddRefs(buf, 1) {
		return
	}
	sh.addRefLocked(buf)
}

// AddRefN is [Arena.AddRefN]: n references at the cost of one AddRef, for
// a buffer handed to n more holders (the subscribers of a fan-out), which
// may DecRef it on any goroutines. On a chunk of a slab that no chain
// touches it takes no lock: one atomic add.
func (sh *Shared) AddRefN(buf []byte, n int) {
	mustCount(n)
	if !checked.Enabled && n < math.MaxInt32 && sh.tryAddRefs(buf, int32(n)) {
		return
	}
	sh.addRefNLocked(buf, n)
}

// tryAddRefs adds d > 0 references to the chunk of buf without a lock,
// for AddRefN and for AddRef when hit misses, and reports whether it did.
func (sh *Shared) tryAddRefs(buf []byte, d int32) bool {
	s, off := sh.openAt(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	if s == nil {
		return false
	}
	i, ok := s.inChunk(off, cap(buf))
	return ok && s.chunkAt(i).tryAddRefs(d)
}

// tryAddRefs adds d > 0 references to a chunk of an open slab with one
// atomic add, and reports whether it did: not for a free chunk, nor past
// math.MaxInt32, which the locked path panics on.
func (ch *chunk) tryAddRefs(d int32) bool {
	if old := atomic.AddInt32(&ch.refs, d) - d; old > 0 && old <= math.MaxInt32-d {
		return true
	}
	atomic.AddInt32(&ch.refs, -d)
	return false
}

// addRefLocked is AddRef under the lock of the buffer's shard, for the
// calls the lock-free path does not serve: it panics on their misuse.
func (sh *Shared) addRefLocked(buf []byte) {
	s := sh.lockBuf(buf, false)
	defer s.unlock()
	s.a.AddRef(buf)
}

// addRefNLocked is addRefLocked for AddRefN.
func (sh *Shared) addRefNLocked(buf []byte, n int) {
	s := sh.lockBuf(buf, false)
	defer s.unlock()
	s.a.AddRefN(buf, n)
}

// DecRef is [Arena.DecRef]. On a chunk of a slab that no chain touches it
// takes no lock: the last reference goes back to the chunk's idle set with
// a load and plain stores (see [Shared] for the window of two goroutines
// freeing one chunk at once), any other with one atomic add. Other
// DecRefs take the lock of the chunk's shard, and when they free a chain,
// release the chunks of each shard in turn.
//
//go:nosplit
func (sh *Shared) DecRef(buf []byte) bool {
	// go:nosplit: the frame is small and fixed, so the stack-bound check
	// at entry (a compare and a branch, 2 of a second holder's ~40
	// instructions) is not needed; the linker proves that the frame fits
	// in the stack's guard area, and every function called checks its own
	// stack as usual. AddRef is the same.
	if !checked.Enabled {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
		var ch *chunk
		var i uintptr
		var ok bool
		s := (*slabTable)(atomic.LoadPointer(&sh.table)).hit(p)
		if off := p - s.base; off < s.hitSpan() {
			// The usual case jumps straight to the chunk: a flag merged
			// with the other lookup's would cost a set, a jump and a test.
			if ch, i, ok = s.hitChunk(off, cap(buf)); ok {
				goto found
			}
		} else if s, off = sh.openAt(s.base + off); s != nil { // s.base+off is p, which need not stay in a register
			ch, i, ok = s.openChunk(off, cap(buf))
		}
		if !ok {
			return sh.decRefLocked(buf[:0]) // see addRefSlow
		}
	found:
		{
			// A second holder's DecRef first: the test of the count is a
			// compare and a jump there.
			if refs := atomic.LoadInt32(&ch.refs); refs > 1 {
				// The count before the add, which the add returns: a
				// compare of it takes no instruction to undo the add's.
				if refs = atomic.AddInt32(&ch.refs, -1) + 1; refs > 1 {
					return false
				}
				return sh.dropped(s, int32(i), refs-1, buf[:0])
			} else if refs == 1 { // the only holder: no other may change the count
				f := s.frontAt(int32(i))
				if t := f.slot.Take(); t != nil {
					ch.setRefs(0)
					ch.bumpGen()
					f.countFree()
					s.idle.Put(t)
					return true
				}
			}
		}
	}
	return sh.decRefLocked(buf[:0])
}

// dropped ends a DecRef whose atomic add took the count of chunk i of s
// to refs <= 0: at 0 another holder's DecRef came first, and the chunk is
// free; below, the add was a DecRef too many, which dropped undoes before
// the locked path panics on it.
func (sh *Shared) dropped(s *slab, i, refs int32, buf []byte) bool {
	if refs == 0 {
		sh.freeLast(s, i)
		return true
	}
	atomic.AddInt32(&s.chunkAt(i).refs, 1)
	return sh.decRefLocked(buf)
}

// freeLast frees chunk i of s, whose count an atomic DecRef took to zero:
// back to its idle set as DecRef's plain path does if its slab is still
// unchained, otherwise under its shard's lock, which drops the chain's
// references (a holder may have chained it before its own DecRef).
func (sh *Shared) freeLast(s *slab, i int32) {
	if !s.chained() {
		f := s.frontAt(i)
		if t := f.slot.Take(); t != nil {
			s.chunkAt(i).bumpGen()
			f.countFree()
			s.idle.Put(t)
			return
		}
	}
	sd := &sh.shards[s.owner]
	sd.lock()
	var h Loc
	if sh.freeHeld(sd, s, i, &h) {
		sh.release(h)
	}
	sh.deliverAlerts()
}

// freeHeld frees chunk i of s under sd's lock, which it releases even when
// the Arena panics, as decRef does.
func (sh *Shared) freeHeld(sd *arenaShard, s *slab, i int32, h *Loc) (chained bool) {
	defer sh.unlockHeld(sd)
	sd.a.freeChunk(s, i)
	return sd.a.moveHandoff(h)
}

// frontAt returns the idle-set record of chunk i of s, 0 <= i <
// len(s.chunks), without a bounds check.
func (s *slab) frontAt(i int32) *frontChunk {
	return (*frontChunk)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.front)), uintptr(i)*unsafe.Sizeof(frontChunk{})))
}

// decRefLocked is DecRef under the lock of the buffer's shard.
func (sh *Shared) decRefLocked(buf []byte) bool {
	s := sh.lockBuf(buf, true)
	var h Loc
	last, chained := sh.decRef(s, buf, &h)
	if chained {
		sh.release(h)
	}
	sh.deliverAlerts()
	return last
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
	last = s.a.decRefSlow(buf)
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
// chunk class; see [Shared] for which figures are exact. It may be called
// from any goroutine: it takes each shard's lock in turn, so the snapshot
// is consistent per shard, not across shards, and it counts the chunks out
// by reading every chunk's slot, O(chunks). It does not allocate once
// st.Classes has room for every class.
func (sh *Shared) ReadStats(st *stats.Stats) {
	sh.statsMu.Lock()
	defer sh.statsMu.Unlock()
	clear(sh.outs)
	clear(sh.frees)
	for k := range sh.shards {
		s := &sh.shards[k]
		dst := st
		if k > 0 {
			dst = &sh.scratch
		}
		s.lock()
		s.a.readStats(dst, true)
		if sh.fronts != nil {
			s.a.countFront(sh.outs, sh.frees)
		}
		s.unlock()
		if k > 0 {
			st.Add(&sh.scratch)
		}
	}
	if sh.fronts != nil {
		sh.addFronts(st)
	}
	st.BadFrees += sh.badFrees.Load()
}

// countFront adds, by class, the chunks out of the idle sets (a ticket in
// their slot) to outs and their frees into the sets to frees. It reads a
// chunk's frees before its slot, and DecRef empties the slot before it
// counts the free, so a chunk's frees plus its being out never pass its
// Gets: the counts are at most the true ones, as the chunk's were at some
// moment of the call.
func (a *Arena) countFront(outs, frees []uint64) {
	for c := range a.classes {
		frees[c] += a.classes[c].setFrees
	}
	for _, s := range a.slabs {
		if s == nil || s.front == nil {
			continue
		}
		c := (uintptr(unsafe.Pointer(s.cl)) - uintptr(unsafe.Pointer(&a.classes[0]))) / unsafe.Sizeof(class{})
		for i := range s.front[:s.fresh] {
			f := &s.front[i]
			frees[c] += uint64(atomic.LoadUint32(&f.frees))
			if f.slot.Out() {
				outs[c]++
			}
		}
	}
}

// addFronts adds what the idle sets count to st, whose rows the shards
// filled without the chunks the sets hold: per class, the chunks' frees
// into the sets as Frees, those plus the chunks out (every Get is a chunk
// out or freed since) as Allocs, and the chunks out as live. The sums may
// be low while goroutines work, never high, so reporting at least the
// highest Allocs and Frees reported before keeps them from going back and
// still exact once the goroutines pause.
func (sh *Shared) addFronts(st *stats.Stats) {
	for c := range st.Classes {
		row, seen := &st.Classes[c], &sh.seen[c]
		frees := max(sh.frees[c], seen.Frees)
		allocs := max(sh.frees[c]+sh.outs[c], seen.Allocs, frees)
		seen.Allocs, seen.Frees = allocs, frees
		out := min(sh.outs[c], allocs-frees, row.IdleObjects)
		row.Allocs += allocs
		row.Frees += frees
		row.LiveObjects += out
		row.IdleObjects -= out
		row.InUseBytes += out * row.Size
		st.Allocs += allocs
		st.Frees += frees
		st.LiveObjects += out
		st.InUseBytes += out * row.Size
	}
}

// Shards returns the number of shards.
func (sh *Shared) Shards() int { return len(sh.shards) }

// sweep gives the chunks that the classes' idle sets hold without a ticket
// (the ones a GC found idle across two GCs, and any carved and not yet
// taken) back to their slabs, under their shards' locks. It runs after
// every GC while the Shared is reachable.
func (sh *Shared) sweep() {
	sh.sweepMu.Lock()
	defer sh.sweepMu.Unlock()
	for _, x := range sh.fronts {
		sh.keys = x.TakeSpare(sh.keys[:0])
		for _, key := range sh.keys {
			f := frontOf(key)
			s := &sh.shards[f.s.owner]
			s.lock()
			s.a.reclaim(f.s, f.i)
			s.unlock()
		}
	}
	sh.deliverAlerts()
}
