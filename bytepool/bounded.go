package bytepool

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/shard"
	"github.com/memkit/memkit/stats"
)

// A Bounded pool's free lists. Its buffers live in a region that must stay
// whole, so it cannot keep them in a sync.Pool, which drops what it holds
// at GC time; it spreads them over shards instead (see internal/shard). A
// shard is a one-word spinlock and a stack per class, held only for a pop
// or a push; shards refill from and spill to a per-class depot in batches.

// boundedShard is one of a Bounded pool's independent sets of free lists.
type boundedShard struct {
	shard.Lock
	lists []freeList // one per class
	_     shard.Pad
}

// freeList is one class's free stack in one shard, with that class's
// counters for the operations the shard served. Guarded by the shard's
// lock.
type freeList struct {
	bufs   []unsafe.Pointer // idle buffers; cap is the class's magazine size
	allocs uint64
	frees  uint64
	// heapLive wraps: summed over shards, it is the number of heap
	// fallback buffers of this class that are live.
	heapLive uint64
}

// pop removes and returns the top buffer, or nil.
func (l *freeList) pop() unsafe.Pointer {
	k := len(l.bufs)
	if k == 0 {
		return nil
	}
	p := l.bufs[k-1]
	l.bufs[k-1] = nil // do not keep a handed-out buffer reachable from here
	l.bufs = l.bufs[:k-1]
	return p
}

// depot is one class's pool-wide store of idle buffers, behind the shards.
// Shards and Caches refill from it and spill to it in batches of half a
// magazine, so its mutex is taken once per batch, not per buffer.
type depot struct {
	mu   sync.Mutex
	bufs []unsafe.Pointer

	// Counters that Caches fold in when they refill, spill or are released.
	allocs uint64
	frees  uint64

	_ shard.Pad
}

// take moves up to len(dst) buffers into dst and reports how many.
func (d *depot) take(dst []unsafe.Pointer) int {
	k := min(len(d.bufs), len(dst))
	from := d.bufs[len(d.bufs)-k:]
	copy(dst, from)
	clear(from)
	d.bufs = d.bufs[:len(d.bufs)-k]
	return k
}

// newBounded sets p up as a Bounded pool: its shards, depots and region.
func (p *Pool) newBounded(cfg *config) error {
	size := cfg.regionSize()
	if size < slabSize || size > maxBudget {
		return fmt.Errorf("%sWithBudget(%d): a Bounded pool's region must be between 64KiB and %s", prefix, size, stats.FormatBytes(uint64(maxBudget)))
	}
	if cfg.HasAlert() {
		threshold, fn := cfg.Alert()
		p.budget = budget.New(size>>slabShift<<slabShift, threshold, fn)
	}
	r, err := newRegion(size, cfg.minSize, p.sizes, p.budget)
	if err != nil {
		return err
	}
	p.region = r
	p.shards = make([]boundedShard, shard.Count(cfg.shards))
	for i := range p.shards {
		p.shards[i].lists = make([]freeList, len(p.sizes))
	}
	p.depots = make([]depot, len(p.sizes))
	p.quickBounded = !cfg.zeroed && !checked.Enabled
	return nil
}

// getBoundedQuick is Get of n <= tabMax from a Bounded pool that neither
// zeroes nor checks: a pop from the goroutine's shard, under its lock.
func (p *Pool) getBoundedQuick(n int) []byte {
	c := p.lookup(n)
	s := p.lockShard()
	l := &s.lists[c]
	k := len(l.bufs) - 1
	if k < 0 {
		s.Unlock()
		return p.getBounded(int(c), n)
	}
	ptr := l.bufs[k]
	l.bufs[k] = nil
	l.bufs = l.bufs[:k]
	l.allocs++
	s.Unlock()
	clearIdle(ptr)
	return slice(ptr, n, p.sizes[c])
}

// putBoundedQuick is Put of a capacity <= tabMax to a Bounded pool that
// neither zeroes nor checks: the region checks, the idle mark, and a push
// on the goroutine's shard under its lock.
func (p *Pool) putBoundedQuick(b []byte) {
	size := cap(b)
	c := p.lookup(size)
	ptr := unsafe.Pointer(unsafe.SliceData(b[:size]))
	if p.sizes[c] != size || !p.region.contains(ptr) || !p.region.isStart(ptr, int(c)) {
		p.putSlow(b)
		return
	}
	p.markIdle(ptr)
	s := p.lockShard()
	l := &s.lists[c]
	if len(l.bufs) < cap(l.bufs) {
		l.bufs = append(l.bufs, ptr)
		l.frees++
		s.Unlock()
		return
	}
	s.Unlock()
	p.pushBounded(ptr, int(c), true)
}

// lockShard locks and returns the calling goroutine's shard, or the next
// free one.
func (p *Pool) lockShard() *boundedShard {
	h := shard.Hint()
	if s := &p.shards[h&uintptr(len(p.shards)-1)]; s.TryLock() {
		return s
	}
	s, _ := shard.LockAny(p.shards, h)
	return s
}

// getBounded is Get of class c from a Bounded pool.
func (p *Pool) getBounded(c, n int) []byte {
	ptr := p.takeBounded(c)
	if ptr == nil {
		return p.fallback(c, n)
	}
	return p.handOutChecked(ptr, c, n)
}

// takeBounded takes an idle buffer of class c from the calling goroutine's
// shard, the depot, the region or another shard, counting the allocation,
// or returns nil, counting nothing, when there is none.
func (p *Pool) takeBounded(c int) unsafe.Pointer {
	ptr := p.takeBoundedOnce(c)
	if ptr == nil && checked.Enabled && p.flushQuarantine() {
		ptr = p.takeBoundedOnce(c)
	}
	return ptr
}

// takeBoundedOnce is takeBounded without the checked build's retry.
func (p *Pool) takeBoundedOnce(c int) unsafe.Pointer {
	s := p.lockShard()
	l := &s.lists[c]
	if ptr := l.pop(); ptr != nil {
		l.allocs++
		s.Unlock()
		return ptr
	}
	return p.refill(s, c) // unlocks s
}

// refill is Get's slow path, entered with s locked and its class-c list
// empty. It moves a batch from the depot (or carves new buffers) into the
// list, counts the allocation and returns one buffer with s unlocked; the
// budget is charged for new runs after the unlock, so that the alert runs
// with no lock of the pool held. It
// returns nil, having counted nothing, when there is no buffer of class c
// left anywhere.
func (p *Pool) refill(s *boundedShard, c int) unsafe.Pointer {
	var batch [64]unsafe.Pointer
	want := batch[:max(p.magCap[c]/2, 1)]
	l := &s.lists[c]
	d := &p.depots[c]
	d.mu.Lock()
	n := d.take(want)
	d.mu.Unlock()
	took := 0
	if n == 0 {
		n, took = p.region.carve(c, p.sizes[c], want)
	}
	if n == 0 {
		s.Unlock()
		return p.steal(s, c)
	}
	if l.bufs == nil {
		l.bufs = make([]unsafe.Pointer, 0, p.magCap[c])
	}
	l.bufs = append(l.bufs, want[1:n]...)
	l.allocs++
	s.Unlock()
	p.region.charge(took) // with s unlocked: the alert may read the stats
	return want[0]
}

// steal takes one idle class-c buffer from another shard, for a Bounded pool
// whose region and depot are empty. It returns nil if there is none.
func (p *Pool) steal(home *boundedShard, c int) unsafe.Pointer {
	for i := range p.shards {
		s := &p.shards[i]
		if s == home {
			continue
		}
		s.Lock.Lock()
		ptr := s.lists[c].pop()
		if ptr != nil {
			s.lists[c].allocs++
		}
		s.Unlock()
		if ptr != nil {
			return ptr
		}
	}
	return nil
}

// countFallback counts a Bounded pool's heap fallback buffer of class c.
func (p *Pool) countFallback(c int) {
	s := p.lockShard()
	s.lists[c].allocs++
	s.lists[c].heapLive++
	s.Unlock()
}

// release checks a Bounded pool's buffer on Put and, in the release build,
// marks it idle. It reports whether the buffer goes back on a free list:
// false for a heap fallback buffer (counted as freed and dropped) and for a
// slice that is not a region buffer's start (counted as a bad free). It
// panics on a second Put of an idle buffer.
func (p *Pool) release(ptr unsafe.Pointer, c, size int) bool {
	r := p.region
	if !r.contains(ptr) {
		p.dropFallback(c, size)
		return false
	}
	if !r.isStart(ptr, c) {
		p.counts.badFrees.Add(1)
		return false
	}
	if !checked.Enabled { // the checked build poisons idle buffers instead
		p.markIdle(ptr)
	}
	return true
}

// dropFallback counts the Put of a Bounded pool's heap fallback buffer of
// class c (or foreign memory of a class's size, which looks the same) and
// lets the GC have it.
func (p *Pool) dropFallback(c, size int) {
	s := p.lockShard()
	s.lists[c].frees++
	s.lists[c].heapLive--
	s.Unlock()
	if p.budget != nil {
		p.budget.Release(int64(size))
	}
}

// countFree counts the Put of a buffer of class c whose filing waits (in
// the checked build's quarantine).
func (p *Pool) countFree(c int) {
	s := p.lockShard()
	s.lists[c].frees++
	s.Unlock()
}

// pushBounded files an idle region buffer of class c on the calling
// goroutine's shard, spilling half the list to the depot when it is full,
// and counts the Put if count is set.
func (p *Pool) pushBounded(ptr unsafe.Pointer, c int, count bool) {
	s := p.lockShard()
	l := &s.lists[c]
	if count {
		l.frees++
	}
	if len(l.bufs) < cap(l.bufs) {
		l.bufs = append(l.bufs, ptr)
		s.Unlock()
		return
	}
	if cap(l.bufs) == 0 {
		l.bufs = make([]unsafe.Pointer, 0, p.magCap[c])
	} else {
		half := max(len(l.bufs)/2, 1)
		move := l.bufs[len(l.bufs)-half:]
		d := &p.depots[c]
		d.mu.Lock()
		d.bufs = append(d.bufs, move...)
		d.mu.Unlock()
		clear(move)
		l.bufs = l.bufs[:len(l.bufs)-half]
	}
	l.bufs = append(l.bufs, ptr)
	s.Unlock()
}
