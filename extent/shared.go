package extent

import (
	"sync"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/shard"
	"github.com/memkit/memkit/stats"
)

// Shared is a goroutine-safe allocator for programs that allocate on one
// goroutine and free on another (Monibuca frees frames on other goroutines
// than the ones that allocate them): [Allocator]s in shards, each behind a
// one-word spinlock.
//
// A Shared is safe for concurrent use by multiple goroutines. The zero value
// is not usable: a Shared must be created with [NewShared]. It must not be
// copied.
//
// A call locks the shard its goroutine's stack address picks (see
// internal/shard), so goroutines running at once mostly work on different
// shards and one goroutine keeps to one, cache-warm shard: a Malloc and Free cost the Allocator's plus one compare-and-swap
// and one store each. A Free (or FreeRest) finds the shard that owns the
// memory: its own shard's block bounds first, a bounds check; memory of
// another shard (a free from another goroutine) costs a lock and a block
// search per shard tried. There are shard.PerP(2, 2) shards, each reserving
// its own blocks, so a Shared may hold up to that many partly used blocks
// more than one Allocator would. With [WithBudget] or [WithBudgetAlert],
// and in the checked build, a Shared keeps one shard, so that the budget,
// the alert and the tracker see every block.
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
}

// sharedShard is one shard: an Allocator and its lock, padded so that
// neighbouring shards do not share a cache line.
type sharedShard struct {
	shard.Lock
	a *Allocator
	_ shard.Pad
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

// Malloc is [Allocator.Malloc] on the calling goroutine's shard.
func (s *Shared) Malloc(n int) []byte {
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

// TryMalloc is [Allocator.TryMalloc] on the calling goroutine's shard.
func (s *Shared) TryMalloc(n int) ([]byte, error) {
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

// Free is [Allocator.Free] on the shard that owns b; any goroutine may free
// memory any other allocated. It panics as Allocator.Free does, with
// "memkit/extent: foreign memory" when no shard owns b.
func (s *Shared) Free(b []byte) {
	if len(b) == 0 {
		return
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

// FreeRest is [Allocator.FreeRest] on the shard that owns b.
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

// Trim is [Allocator.Trim] on every shard, and returns the bytes released.
func (s *Shared) Trim() int {
	n := 0
	s.each(func(a *Allocator) { n += a.Trim() })
	return n
}

// Close is [Allocator.Close] on every shard.
func (s *Shared) Close() { s.each(func(a *Allocator) { a.Close() }) }

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

// ReadStats fills *st with the exact figures of every shard added up: it
// publishes each shard's under its lock, as [Allocator.PublishStats] does,
// and reads them. It costs a lock per shard and does not allocate.
func (s *Shared) ReadStats(st *stats.Stats) {
	var sum [nPub]uint64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock.Lock()
		sh.a.PublishStats()
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
	fill(st, &sum)
}
