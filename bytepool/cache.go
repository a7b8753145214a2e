package bytepool

import (
	"sync"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// Cache is a per-goroutine front for a [Pool]: its own free list per class,
// refilled from and spilled to the pool in batches, for hot loops where even
// the pool's per-P fast path shows.
//
// A Cache is not safe for concurrent use; give each goroutine its own. The
// zero value is not usable: create one with [Pool.NewCache]. It must not be
// copied. Get and Put are a class lookup and a slice pop or push, with no
// lock and no atomic operation (but an add to an Elastic pool's sampled
// count, for 1 buffer in 64), about half the cost of the pool's. A Cache holds at
// most a magazine per class (64 small buffers, about 512 KiB of a large
// class) beyond what the pool holds; call [Cache.Release] when the
// goroutine is done, or those buffers stay out of the pool until the Cache
// is collected. In the checked build a Cache passes every call to its pool.
//
// Buffers from a Cache may be put back to the pool or to any other Cache of
// the same pool, and the other way round.
//
// A Cache counts its Gets and Puts exactly and folds the counts into the
// pool's [Pool.ReadStats] whenever it refills, spills or is released, so
// the pool's stats may lag a busy Cache by up to a batch per class. (An
// Elastic pool's in-use estimate counts a Cache's sampled buffers at once.)
type Cache struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	// The pool's lookup table and limits, copied so that the hot path
	// reads only the Cache.
	tab       []uint8
	tabEnd    uint
	stepMask  int
	stepShift uint
	sampleMax uintptr
	plain     bool // the pool is neither Bounded nor zeroing nor checked

	lists []cacheList
	p     *Pool
}

type cacheList struct {
	bufs   []unsafe.Pointer
	size   int           // the class size
	e      *elasticClass // Elastic: the pool's class, for its sampled counts
	allocs uint64        // not yet folded into the pool
	frees  uint64
}

// NewCache returns a Cache in front of p.
func (p *Pool) NewCache() *Cache {
	c := &Cache{
		tab: p.tab, tabEnd: p.tabEnd, stepMask: p.stepMask, stepShift: p.stepShift,
		sampleMax: p.sampleMax, plain: p.plain,
		lists: make([]cacheList, len(p.sizes)),
		p:     p,
	}
	for i := range c.lists {
		c.lists[i].size = p.sizes[i]
		if p.elastic != nil {
			c.lists[i].e = &p.elastic[i]
		}
	}
	return c
}

// sampled is [Pool.sampled] from the Cache's copy of the shift.
func (c *Cache) sampled(ptr unsafe.Pointer) bool {
	return inSample(ptr, c.sampleMax)
}

// Get is [Pool.Get] served from the Cache.
func (c *Cache) Get(n int) []byte {
	var cl int
	if uint(n) < c.tabEnd {
		cl = int(c.tab[uint(n+c.stepMask)>>(c.stepShift&63)])
	} else {
		return c.getLarge(n)
	}
	l := &c.lists[cl]
	k := len(l.bufs) - 1
	if k < 0 || !c.plain {
		return c.getSlow(cl, n)
	}
	ptr := l.bufs[k]
	l.bufs = l.bufs[:k]
	l.allocs++
	if c.sampled(ptr) {
		l.e.cgets.Add(1)
	}
	clearIdle(ptr)
	return slice(ptr, n, l.size)
}

// getLarge is Get for sizes past the lookup table.
func (c *Cache) getLarge(n int) []byte {
	p := c.p
	if uint(n) > uint(p.maxSize) {
		return p.getOversize(n)
	}
	return c.getSlow(p.class(n), n)
}

// getSlow is Get for class cl when the list is empty or the pool checks or
// zeroes what it hands out.
func (c *Cache) getSlow(cl, n int) []byte {
	if checked.Enabled {
		return c.p.Get(n)
	}
	l := &c.lists[cl]
	k := len(l.bufs) - 1
	if k < 0 {
		return c.refill(cl, n)
	}
	ptr := l.bufs[k]
	l.bufs = l.bufs[:k]
	l.allocs++
	if l.e != nil && c.sampled(ptr) {
		l.e.cgets.Add(1)
	}
	return c.p.handOut(ptr, cl, n)
}

// Put is [Pool.Put] into the Cache.
func (c *Cache) Put(b []byte) {
	size := cap(b)
	if uint(size) >= c.tabEnd || !c.plain {
		c.putSlow(b)
		return
	}
	l := &c.lists[c.tab[uint(size+c.stepMask)>>(c.stepShift&63)]]
	ptr := unsafe.Pointer(unsafe.SliceData(b[:size]))
	if l.size != size || len(l.bufs) == cap(l.bufs) || l.e.misaligned(ptr) {
		c.putSlow(b)
		return
	}
	c.p.markIdle(ptr)
	if c.sampled(ptr) {
		l.e.cputs.Add(1)
	}
	l.bufs = append(l.bufs, ptr)
	l.frees++
}

// putSlow is Put for large or odd capacities, a full list, or a pool that
// checks what comes back.
func (c *Cache) putSlow(b []byte) {
	p := c.p
	if checked.Enabled {
		p.Put(b)
		return
	}
	size := cap(b)
	cl := p.exact(size)
	if cl < 0 {
		p.putOdd(b)
		return
	}
	ptr := unsafe.Pointer(unsafe.SliceData(b[:size]))
	l := &c.lists[cl]
	if p.region != nil {
		if !p.release(ptr, cl, size) {
			return
		}
	} else {
		if l.e.misaligned(ptr) {
			p.counts.badFrees.Add(1)
			return
		}
		p.markIdle(ptr)
		if c.sampled(ptr) {
			l.e.cputs.Add(1)
		}
	}
	if len(l.bufs) == cap(l.bufs) {
		c.spill(cl)
	}
	l.bufs = append(l.bufs, ptr)
	l.frees++
}

// refill fetches half a magazine of class cl from the pool, folding the
// Cache's counters in on the way, and serves n from it.
func (c *Cache) refill(cl, n int) []byte {
	p := c.p
	l := &c.lists[cl]
	if l.bufs == nil {
		l.bufs = make([]unsafe.Pointer, 0, p.magCap[cl])
	}
	want := l.bufs[:max(cap(l.bufs)/2, 1)]
	got := 0
	if p.region != nil {
		d := &p.depots[cl]
		d.mu.Lock()
		got = d.take(want)
		c.fold(cl)
		d.mu.Unlock()
		if got == 0 {
			got = p.region.carve(cl, p.sizes[cl], want)
		}
		if got == 0 {
			// The region is used up: take the pool's slow path, which steals
			// from the shards or falls back to the heap.
			return p.Get(n)
		}
	} else {
		c.fold(cl)
		for got < len(want) {
			ptr, _ := l.e.free.Get().(unsafe.Pointer)
			if ptr == nil {
				break
			}
			want[got] = ptr
			got++
		}
		if got == 0 {
			ptr := p.grow(cl)
			if ptr == nil {
				return p.fallback(cl, n)
			}
			want[0] = ptr
			got = 1
		}
	}
	ptr := want[got-1]
	want[got-1] = nil
	l.bufs = want[:got-1]
	l.allocs++
	if l.e != nil && c.sampled(ptr) {
		l.e.cgets.Add(1)
	}
	return p.handOut(ptr, cl, n)
}

// spill makes room in class cl's full list: it moves half of it to the
// pool, or gives a list not yet used its storage.
func (c *Cache) spill(cl int) {
	l := &c.lists[cl]
	if cap(l.bufs) == 0 {
		l.bufs = make([]unsafe.Pointer, 0, c.p.magCap[cl])
		return
	}
	half := max(len(l.bufs)/2, 1)
	move := l.bufs[len(l.bufs)-half:]
	c.give(cl, move)
	clear(move)
	l.bufs = l.bufs[:len(l.bufs)-half]
}

// give hands idle buffers of class cl to the pool and folds the Cache's
// counters of the class in.
func (c *Cache) give(cl int, bufs []unsafe.Pointer) {
	p := c.p
	if p.region != nil {
		d := &p.depots[cl]
		d.mu.Lock()
		d.bufs = append(d.bufs, bufs...)
		c.fold(cl)
		d.mu.Unlock()
		return
	}
	c.fold(cl)
	e := c.lists[cl].e
	for _, ptr := range bufs {
		e.free.Put(ptr)
	}
}

// fold adds class cl's unfolded counters to the pool: to the depot, whose
// lock the caller holds, in a Bounded pool; to the class's atomics in an
// Elastic one.
func (c *Cache) fold(cl int) {
	l := &c.lists[cl]
	if l.allocs == 0 && l.frees == 0 {
		return
	}
	if l.e != nil {
		l.e.cacheAllocs.Add(l.allocs)
		l.e.cacheFrees.Add(l.frees)
	} else {
		d := &c.p.depots[cl]
		d.allocs += l.allocs
		d.frees += l.frees
	}
	l.allocs, l.frees = 0, 0
}

// Release returns every buffer the Cache holds to the pool and folds its
// counters into the pool's stats. The Cache stays usable.
func (c *Cache) Release() {
	for cl := range c.lists {
		l := &c.lists[cl]
		if len(l.bufs) == 0 && l.allocs == 0 && l.frees == 0 {
			continue
		}
		c.give(cl, l.bufs)
		clear(l.bufs)
		l.bufs = l.bufs[:0]
	}
}
