package bytepool

import (
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// Cache is a per-goroutine front for a [Pool]: its own free list per class,
// refilled from and spilled to the pool in batches, for hot loops where even
// the pool's uncontended lock shows.
//
// A Cache is not safe for concurrent use; give each goroutine its own. The
// zero value is not usable: create one with [Pool.NewCache]. It must not be
// copied. Get and Put are a class lookup and a slice pop or push, with no
// atomic operation (in a Bounded pool, one atomic bit flip for the
// double-free check). A Cache holds at most a magazine per class (64 small
// buffers, about 512 KiB of a large class) beyond what the pool holds; call
// [Cache.Release] when the goroutine is done, or those buffers stay out of
// the pool until the Cache is collected.
//
// Buffers from a Cache may be put back to the pool or to any other Cache of
// the same pool, and the other way round.
//
// Its counters are folded into the pool's [Pool.ReadStats] whenever it
// refills, spills or is released, so the pool's stats may lag a busy Cache
// by up to a batch per class.
type Cache struct {
	// The pool's lookup table and limits, copied so that the hot path
	// reads only the Cache.
	tab       []uint8
	tabMax    int
	stepMask  int
	stepShift uint
	plain     bool // the pool is neither Bounded nor zeroing nor checked

	lists []cacheList
	p     *Pool
}

type cacheList struct {
	bufs   []unsafe.Pointer
	size   int    // the class size
	allocs uint64 // not yet folded into the pool
	frees  uint64
	grows  uint64
}

// NewCache returns a Cache in front of p.
func (p *Pool) NewCache() *Cache {
	c := &Cache{
		tab: p.tab, tabMax: p.tabMax, stepMask: p.stepMask, stepShift: p.stepShift, plain: p.plain,
		lists: make([]cacheList, len(p.sizes)),
		p:     p,
	}
	for i := range c.lists {
		c.lists[i].size = p.sizes[i]
	}
	return c
}

// Get is [Pool.Get] served from the Cache.
func (c *Cache) Get(n int) []byte {
	var cl int
	if uint(n) <= uint(c.tabMax) {
		cl = int(c.tab[(n+c.stepMask)>>c.stepShift])
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
	clearIdle(ptr)
	return unsafe.Slice((*byte)(ptr), l.size)[:n]
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
	l := &c.lists[cl]
	k := len(l.bufs) - 1
	if k < 0 {
		return c.refill(cl, n)
	}
	ptr := l.bufs[k]
	l.bufs = l.bufs[:k]
	l.allocs++
	return c.p.handOut(ptr, cl, n)
}

// Put is [Pool.Put] into the Cache.
func (c *Cache) Put(b []byte) {
	size := cap(b)
	if uint(size) > uint(c.tabMax) || !c.plain {
		c.putSlow(b)
		return
	}
	l := &c.lists[c.tab[(size+c.stepMask)>>c.stepShift]]
	if l.size != size || len(l.bufs) == cap(l.bufs) {
		c.putSlow(b)
		return
	}
	ptr := unsafe.Pointer(unsafe.SliceData(b[:size]))
	c.p.markIdle(ptr)
	l.bufs = append(l.bufs, ptr)
	l.frees++
}

// putSlow is Put for large or odd capacities, a full list, or a pool that
// checks what comes back.
func (c *Cache) putSlow(b []byte) {
	p := c.p
	if checked.Enabled {
		p.checkPut(b)
	}
	size := cap(b)
	cl := p.exact(size)
	if cl < 0 {
		p.putOdd(size)
		return
	}
	ptr := unsafe.Pointer(unsafe.SliceData(b[:size]))
	if p.region != nil {
		if !p.release(ptr, cl, size) {
			return
		}
	} else if !checked.Enabled {
		p.markIdle(ptr)
	}
	l := &c.lists[cl]
	if len(l.bufs) == cap(l.bufs) {
		c.spill(cl)
	}
	l.bufs = append(l.bufs, ptr)
	l.frees++
}

// refill fetches half a magazine of class cl from the pool's depot (or
// region), folding the Cache's counters in on the way, and serves n from it.
func (c *Cache) refill(cl, n int) []byte {
	p := c.p
	l := &c.lists[cl]
	if l.bufs == nil {
		l.bufs = make([]unsafe.Pointer, 0, p.magCap[cl])
	}
	want := l.bufs[:max(cap(l.bufs)/2, 1)]
	d := &p.depots[cl]
	d.mu.Lock()
	got := d.take(want)
	c.fold(d, l)
	d.mu.Unlock()
	if got == 0 && p.region != nil {
		got = p.region.carve(cl, p.sizes[cl], want)
	}
	if got == 0 {
		if p.region != nil {
			// The region is used up: take the pool's slow path, which steals
			// from the shards or falls back to the heap.
			return p.Get(n)
		}
		if p.budget != nil && !p.budget.TryCharge(int64(p.sizes[cl])) {
			return p.fallback(cl, n)
		}
		l.allocs++
		l.grows++
		return p.handOut(p.newBuffer(cl), cl, n)
	}
	ptr := want[got-1]
	want[got-1] = nil
	l.bufs = want[:got-1]
	l.allocs++
	return p.handOut(ptr, cl, n)
}

// spill makes room in class cl's full list: it moves half of it to the
// pool's depot, or gives a list not yet used its storage.
func (c *Cache) spill(cl int) {
	l := &c.lists[cl]
	if cap(l.bufs) == 0 {
		l.bufs = make([]unsafe.Pointer, 0, c.p.magCap[cl])
		return
	}
	half := max(len(l.bufs)/2, 1)
	move := l.bufs[len(l.bufs)-half:]
	d := &c.p.depots[cl]
	d.mu.Lock()
	dropped := c.p.stash(d, cl, move)
	c.fold(d, l)
	d.mu.Unlock()
	clear(move)
	l.bufs = l.bufs[:len(l.bufs)-half]
	if dropped > 0 {
		c.p.budget.Release(dropped)
	}
}

// fold adds l's unfolded counters to d; d.mu must be held.
func (c *Cache) fold(d *depot, l *cacheList) {
	d.allocs += l.allocs
	d.frees += l.frees
	d.grows += l.grows
	l.allocs, l.frees, l.grows = 0, 0, 0
}

// Release returns every buffer the Cache holds to the pool and folds its
// counters into the pool's stats. The Cache stays usable.
func (c *Cache) Release() {
	var dropped int64
	for cl := range c.lists {
		l := &c.lists[cl]
		if len(l.bufs) == 0 && l.allocs == 0 && l.frees == 0 && l.grows == 0 {
			continue
		}
		d := &c.p.depots[cl]
		d.mu.Lock()
		dropped += c.p.stash(d, cl, l.bufs)
		c.fold(d, l)
		d.mu.Unlock()
		clear(l.bufs)
		l.bufs = l.bufs[:0]
	}
	if dropped > 0 {
		c.p.budget.Release(dropped)
	}
}
