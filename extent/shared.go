package extent

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/shard"
	"github.com/memkit/memkit/stats"
)

// Shared is a goroutine-safe allocator for programs that allocate on one
// goroutine and free on another (Monibuca frees frames on other goroutines
// than the ones that allocate them): [Allocator]s in shards, each behind a
// one-word spinlock, and in front of them a cache of fixed-size chunks per
// size class, up to 64 KiB, whose warm Malloc and Free take no lock and no
// locked instruction.
//
// A Shared is safe for concurrent use by multiple goroutines. The zero value
// is not usable: a Shared must be created with [NewShared]. It must not be
// copied.
//
// The front cache: a Malloc of 1 to 64 KiB takes a chunk of its size class
// (16 to 128 bytes in steps of 16, then four classes per doubling, so a
// chunk is less than 25% larger than the request) from the class's idle set
// (memkit's internal/shard Idle: a ticket per idle chunk in a sync.Pool), and
// a Free of exactly what a Malloc returned finds the chunk in a hash table
// of chunk addresses, read without a lock, and puts its ticket back: a
// sync.Pool Get and Put, a few loads and plain stores, about 1.5 times a
// sync.Pool Get+Put of a buffer (see BenchmarkShared_MallocFree). The
// memory stays exact-size: len and cap are n. The chunks are carved from
// segments of up to 64 KiB, each one ordinary Malloc of the calling
// goroutine's shard's Allocator, under its lock; so the Allocator owns all
// memory and its figures hold. Any other Free of a chunk's memory — a part
// of it, FreeRest, a range running past it — takes the shard's lock and
// detaches the chunk: the bytes past its Malloc go back to the Allocator,
// whose Free then serves the chunk's bytes with its exact semantics, now
// and at every later Free of them. A Free of a chunk that is idle again,
// whole or in part, panics with "memkit/extent: double free" at the call,
// as the Allocator's does. Two Frees of one chunk made at the same instant
// by two goroutines (a double free racing itself) may both pass, in the
// few instructions between one's load of the chunk's slot and its store,
// and the chunk is then handed out twice, as a slab.Shared's may; the race
// detector may report them.
//
// Idle chunks serve only their class until a GC finds them idle: a
// sync.Pool drops what it held across two GCs, and after each GC the Shared
// gives the chunks whose tickets were dropped, and those carved and never
// taken, back to their Allocators; so a chunk idle since a GC is back by
// the end of the third GC after its Free (the second GC drops its ticket;
// the sweep after it, or after the third when the ticket's cleanup runs
// late, gives the chunk back), and [Shared.Trim] then gives blocks back as
// an Allocator's does. A chunk used between GCs is not given back and
// costs no carve: the sync.Pool's victim cache keeps its ticket across one
// GC. But a goroutine that a GC moves to another P cannot take the ticket
// its old P kept as its private item, so its next Malloc of that class
// may carve a segment under the shard's lock (at most one per class per P
// per GC; about a third of the GCs of a one-chunk loop on 2 Ps), and the
// chunk left behind goes back two GCs later: the churn is per GC, not per
// call. Under the race detector the idle sets keep their chunks on a
// locked stack, and never give them back. Besides the
// Allocator's bookkeeping a chunk costs a 64-byte record and, once used, a
// 16-byte ticket and its cleanup record on the Go heap.
//
// Other calls lock the shard their goroutine's stack address picks (see
// internal/shard): a Malloc of more than 64 KiB, and a Free of memory
// outside the front cache, cost the Allocator's plus one compare-and-swap
// and one store each. Such a Free finds the shard that owns the memory:
// its own shard's block bounds first, a bounds check; memory of another
// shard costs a lock and a block search per shard tried. There are
// shard.PerP(2, 2) shards, each reserving its own blocks, so a Shared may
// hold up to that many partly used blocks more than one Allocator would.
// With [WithBudget] or [WithBudgetAlert], and in the checked build, a
// Shared keeps one shard and no front cache, so that the budget, the alert
// and the tracker see every Malloc.
//
// [Shared.Borrow] memory is shared by every goroutine until the next
// [Shared.Recycle], whichever goroutine calls it: the goroutines must agree
// on when that is (a [Recyclable] per batch frees a batch without such an
// agreement). Memory, overhead and zeroing are the Allocator's.
type Shared struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	shards []sharedShard
	mask   uintptr
	alert  *budget.Budget // the one shard's WithBudgetAlert, deferred; or nil

	// The front cache (front.go); front is nil where it is off.
	front    *frontSet
	segs     atomic.Pointer[segTable]
	chunks   atomic.Pointer[chunkTable]
	segMu    sync.Mutex            // serializes segs and all
	all      map[*segment]struct{} // every segment whose records may still be reached by a key
	discards atomic.Uint64         // tickets of detached chunks a Get dropped
	sweepMu  sync.Mutex            // serializes sweep and Close
	keys     []uintptr             // the sweep's scratch

	// Under segMu: the Gets and Frees of the chunks of segments dropped
	// from all, and the highest Allocs and Frees ReadStats reported.
	retiredGets, retiredFrees uint64
	seenAllocs, seenFrees     uint64
}

// sharedShard is one shard: an Allocator and its lock, padded so that
// neighbouring shards do not share a cache line.
type sharedShard struct {
	shard.Lock
	a *Allocator
	// The front cache's own calls of a, which ReadStats leaves out: the
	// Mallocs of segments, and the Frees of their chunks' unused bytes.
	segAllocs, segFrees uint64
	_                   shard.Pad
}

// NewShared returns a goroutine-safe allocator configured by opts, or an
// error naming the first invalid option.
func NewShared(opts ...Option) (*Shared, error) {
	a, err := New(opts...)
	if err != nil {
		return nil, err
	}
	n := shard.PerP(2, 2)
	if checked.Enabled || a.cfg.Any() {
		n = 1
	}
	s := &Shared{shards: make([]sharedShard, n), mask: uintptr(n - 1)}
	s.shards[0].a = a
	// The alert runs after the shard's lock is released (Notify), never
	// under it: it may call ReadStats, which takes the lock.
	a.alert.Defer()
	s.alert = a.alert
	for i := 1; i < n; i++ {
		s.shards[i].a, _ = New(opts...)
	}
	if checked.Enabled {
		checked.Register(s, a.dbg.tr)
	} else if !a.cfg.Any() {
		s.resetFront()
		shard.AfterEachGC(weak.Make(s), (*Shared).sweep)
	}
	return s, nil
}

// home returns the calling goroutine's shard, which the caller locks. A
// goroutine waits for its shard rather than take another: memory it
// allocates then stays on its shard, where its Free finds it without a
// search. (home is inlined, and so is the lock's fast path where the
// caller writes sh.Lock.Lock(): a call less per Malloc and Free than a
// function that did both.)
func (s *Shared) home() *sharedShard { return &s.shards[shard.Hint()&s.mask] }

// Malloc is [Allocator.Malloc]: for 1 to 64 KiB, a chunk of the front
// cache (see [Shared]), carving a segment from the calling goroutine's
// shard when the class has no idle chunk; otherwise on that shard.
func (s *Shared) Malloc(n int) []byte {
	if f := s.front; f != nil && uint(n-1) < frontMax {
		// get, inline: the warm path is a sync.Pool Get and plain stores.
		if t := f.idle[frontClass[(n+15)>>4]&63].Get(); t != nil {
			r := recOf(t.Key())
			if r.state.Load() == chunkFront {
				r.size = n
				return unsafe.Slice((*byte)(r.ptr), uint(n)) // uint: no negative-length check
			}
			s.discard(r)
		}
		if b := s.mallocFront(f, n); b != nil {
			return b
		}
	}
	b := s.malloc(n)
	s.alert.Notify()
	return b
}

// malloc is Malloc under the shard's lock, without the alert.
func (s *Shared) malloc(n int) []byte {
	sh := s.home()
	sh.Lock.Lock()
	defer sh.Unlock()
	return sh.a.Malloc(n)
}

// TryMalloc is [Allocator.TryMalloc], served as Malloc is.
func (s *Shared) TryMalloc(n int) ([]byte, error) {
	if f := s.front; f != nil && uint(n-1) < frontMax {
		if b := s.mallocFront(f, n); b != nil {
			return b, nil
		}
	}
	b, err := s.tryMalloc(n)
	s.alert.Notify()
	return b, err
}

// tryMalloc is TryMalloc under the shard's lock, without the alert.
func (s *Shared) tryMalloc(n int) ([]byte, error) {
	sh := s.home()
	sh.Lock.Lock()
	defer sh.Unlock()
	return sh.a.TryMalloc(n)
}

// Free is [Allocator.Free]; any goroutine may free memory any other
// allocated. A Free of exactly what a Malloc of the front cache returned
// gives its chunk back without a lock; any other Free of front-cache
// memory detaches the chunks it touches (see [Shared]) and, as a Free of
// other memory, frees b on the shard that owns it. It panics as
// Allocator.Free does, with "memkit/extent: foreign memory" when no shard
// owns b.
func (s *Shared) Free(b []byte) {
	if len(b) == 0 {
		return
	}
	if s.front != nil {
		p := sliceAddr(b)
		// chunkAt, its first try inline: a hash, a load and a compare.
		t := s.chunks.Load()
		i := shard.Mix(p) >> (t.shift & (bits.UintSize - 1))
		r := (*chunkRec)(nil)
		if e := t.at(i); e.p.Load() == p {
			r = e.r.Load()
		} else {
			r = t.probe(i, p)
		}
		if r != nil && len(b) == r.size && r.state.Load() == chunkFront {
			if t := r.slot.Take(); t != nil {
				r.countFree()
				r.idle.Put(t)
				return
			}
		}
		if s.freeFront(b) {
			return
		}
	}
	s.free(b)
	s.alert.Notify()
}

// free is Free of a non-empty b under the owning shard's lock, without the
// alert.
func (s *Shared) free(b []byte) {
	p := sliceAddr(b)
	e := p + uintptr(len(b))
	// The common case first: memory freed on the goroutine, and so the
	// shard, that allocated it.
	sh := s.home()
	sh.Lock.Lock()
	if !sh.a.owns(p, e) && len(s.shards) > 1 {
		sh.Unlock()
		sh = s.owner(p, e, sh)
	}
	defer sh.Unlock()
	sh.a.Free(b)
}

// owner locks and returns the shard whose blocks hold [p, e), trying each
// shard in turn (home, the caller's, does not). When none does, it returns
// home, whose Free then reports foreign memory.
func (s *Shared) owner(p, e uintptr, home *sharedShard) *sharedShard {
	for i := range s.shards {
		sh := &s.shards[i]
		if sh == home {
			continue
		}
		sh.Lock.Lock()
		if sh.a.owns(p, e) {
			return sh
		}
		sh.Unlock()
	}
	home.Lock.Lock()
	return home
}

// FreeRest is [Allocator.FreeRest]: Free of b[keep:], served as Free is.
func (s *Shared) FreeRest(b []byte, keep int) []byte {
	if keep < 0 || keep > len(b) {
		panic(errKeep)
	}
	s.Free(b[keep:])
	return b[:keep:keep]
}

// Borrow is [Allocator.Borrow] on the calling goroutine's shard: n bytes of
// scratch memory, valid until the next [Shared.Recycle] by any goroutine.
// Borrowed memory must not be freed. It costs the bump of Allocator.Borrow
// plus the lock.
func (s *Shared) Borrow(n int) []byte {
	b := s.borrow(n)
	s.alert.Notify()
	return b
}

// borrow is Borrow under the shard's lock, without the alert.
func (s *Shared) borrow(n int) []byte {
	sh := s.home()
	sh.Lock.Lock()
	defer sh.Unlock()
	return sh.a.Borrow(n)
}

// Recycle is [Allocator.Recycle] on every shard: it ends every Borrow since
// the previous Recycle, made on any goroutine. No goroutine may use memory
// it borrowed before the Recycle once Recycle has started, so call it when
// every borrower is done (at the end of a frame, after a sync.WaitGroup's
// Wait). Allocations from Malloc are not affected.
func (s *Shared) Recycle() { s.each(func(a *Allocator) { a.Recycle() }) }

// Trim gives the front cache's chunks that a GC found idle, and those
// carved and not yet taken, back to their shards (as the sweep after each
// GC does), and is then [Allocator.Trim] on every shard; it returns the
// bytes released.
func (s *Shared) Trim() int {
	if s.front != nil {
		s.sweep()
	}
	n := 0
	s.each(func(a *Allocator) { n += a.Trim() })
	return n
}

// Close drops the front cache and is [Allocator.Close] on every shard.
func (s *Shared) Close() {
	if s.front != nil {
		s.sweepMu.Lock()
		s.resetFront()
		s.sweepMu.Unlock()
	}
	s.each(func(a *Allocator) { a.Close() })
}

// resetFront gives the Shared an empty front cache, keeping the counts of
// the one it had.
func (s *Shared) resetFront() {
	s.segMu.Lock()
	defer s.segMu.Unlock()
	for sg := range s.all {
		s.retiredGets += sg.gets()
		s.retiredFrees += sg.frees()
	}
	s.front = newFrontSet()
	s.segs.Store(&segTable{})
	s.chunks.Store(newChunkTable(nil))
	s.all = make(map[*segment]struct{})
}

// each calls f with each shard's Allocator, under the shard's lock, and
// then the alert with no lock held.
func (s *Shared) each(f func(a *Allocator)) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock.Lock()
		func() {
			defer sh.Unlock()
			f(sh.a)
		}()
	}
	s.alert.Notify()
}

// ReadStats fills *st with the figures of every shard added up: it
// publishes each shard's under its lock, as [Allocator.PublishStats] does,
// and reads them. The front cache's own Mallocs and Frees of the
// Allocators (its segments, and the chunks it gives back) are left out, and
// its chunks' Mallocs and Frees, which the lock-free paths count per chunk
// with plain stores, are summed in: exact once the calls happened before
// ReadStats (a WaitGroup, a channel), and otherwise low by the calls in
// flight; Allocs and Frees never go back. The bytes of idle chunks count as
// free; a chunk out counts its whole size as in use. InUseBytes never
// exceeds ReservedBytes and no figure is negative. It costs a lock per
// shard and a pass over the chunks (O(chunks)), and does not allocate.
func (s *Shared) ReadStats(st *stats.Stats) {
	var sum [nPub]uint64
	var segAllocs, segFrees uint64
	if s.front != nil {
		// No sweep between the shards' figures and the front cache's.
		s.sweepMu.Lock()
		defer s.sweepMu.Unlock()
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock.Lock()
		sh.a.PublishStats()
		segAllocs += sh.segAllocs
		segFrees += sh.segFrees
		sh.Unlock()
		var v [nPub]uint64
		sh.a.pub.seq.Load(sh.a.pub.v[:], v[:])
		for k := range sum {
			if k == pubLargest {
				sum[k] = max(sum[k], v[k])
			} else {
				sum[k] += v[k]
			}
		}
	}
	if s.front != nil {
		s.frontStats(&sum, segAllocs, segFrees)
	}
	fill(st, &sum)
}

// frontStats corrects the shards' figures in sum for the front cache:
// the Mallocs and Frees it made of the Allocators go, the Gets and whole
// Frees of its chunks count, and its idle chunks' bytes are free, not in
// use. The chunk counts are plain ones their goroutines write, summed
// here: exact once those calls happened before ReadStats, and otherwise
// low by the calls in flight; Allocs and Frees never go back.
func (s *Shared) frontStats(sum *[nPub]uint64, segAllocs, segFrees uint64) {
	discards := s.discards.Load() // before the Gets, which count every discarded one
	s.segMu.Lock()
	defer s.segMu.Unlock()
	gets, frees, idle := s.retiredGets, s.retiredFrees, uint64(0)
	for sg := range s.all {
		for i := range sg.recs {
			r := &sg.recs[i]
			gets += r.slot.Gets()
			frees += uint64(atomic.LoadUint32(&r.frees))
			if r.state.Load() == chunkFront && !r.slot.Out() {
				idle += uint64(sg.cs)
			}
		}
	}
	s.seenAllocs = max(s.seenAllocs, sum[pubAllocs]+gets-min(segAllocs+discards, sum[pubAllocs]+gets))
	s.seenFrees = max(s.seenFrees, sum[pubFrees]+frees-min(segFrees, sum[pubFrees]+frees))
	sum[pubAllocs], sum[pubFrees] = s.seenAllocs, s.seenFrees
	sum[pubFree] += idle
}
