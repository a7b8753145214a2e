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
// copied. Get and Put are a table lookup and a pop or push on the class's
// list, with the idle mark, and no lock, no atomic operation and no shared
// write: about half the cost of the pool's. A Cache holds at
// most a magazine per class (64 small buffers, about 512 KiB of a large
// class) beyond what the pool holds; call [Cache.Release] when the
// goroutine is done, or those buffers stay out of the pool until the Cache
// is collected. In the checked build, and in front of a [Bounded] pool
// (whose own Get and Put take no lock and keep its buffers per P already),
// a Cache passes every call to its pool.
//
// Buffers from a Cache may be put back to the pool or to any other Cache of
// the same pool, and the other way round.
//
// A Cache counts its Gets and Puts exactly and folds the counts into the
// pool's [Pool.ReadStats] whenever it refills, spills or is released, so
// the pool's stats may lag a busy Cache by up to a batch per class. (An
// Elastic pool's in-use estimate counts the sampled buffers a Cache takes
// from the pool and gives back to it, and those it holds idle, at the same
// moments.)
type Cache struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	// What the hot path reads, copied from the pool so that it reads only
	// the Cache: the lookup table, and the idle mark's secret.
	tabBase unsafe.Pointer
	tabEnd  uint           // the pool's, or 0 (every call takes the slow path) unless the pool is plain
	lists   unsafe.Pointer // &all[0]
	secret  uint64

	all  []cacheList
	idle []uint64 // Elastic: per class, sampled buffers idle in the list, as the pool last saw them
	p    *Pool
}

// cacheList is a Cache's free list of one class: 64 bytes on 64-bit
// platforms, so that finding it is a shift.
type cacheList struct {
	bufs   []unsafe.Pointer // the magazine, len(bufs) == cap(bufs): bufs[:n] are idle
	n      int
	size   int     // the class size
	mask   uintptr // the class's alignment mask when the Cache was made (putSlow checks the pool's)
	allocs uint64  // Gets not yet folded into the pool
	// base is n as of the last settle, moved with every change of n that is
	// not a Get or Put (a refill, a spill): the Puts not yet folded are
	// allocs + n - base, so Put counts nothing.
	base int
}

// NewCache returns a Cache in front of p.
func (p *Pool) NewCache() *Cache {
	c := &Cache{tabBase: p.tabBase, secret: p.secret, all: make([]cacheList, len(p.sizes)), p: p}
	if p.plain { // the lists serve locked classes too: the Cache's end is the table's, not p.fastEnd
		c.tabEnd = p.tabEnd
	}
	c.idle = make([]uint64, len(c.all))
	c.lists = unsafe.Pointer(&c.all[0])
	for i := range c.all {
		l := &c.all[i]
		l.size = p.sizes[i]
		if p.elastic != nil {
			l.mask = p.elastic.classes[i].alignMask.Load()
		}
	}
	return c
}

// list returns class cl's list, cl < len(c.all), which the lookup table
// guarantees: a shift and an add, no bounds check.
func (c *Cache) list(cl uint8) *cacheList {
	return (*cacheList)(unsafe.Add(c.lists, uintptr(cl)*unsafe.Sizeof(cacheList{})))
}

// Get is [Pool.Get] served from the Cache.
func (c *Cache) Get(n int) []byte {
	if uint(n) >= c.tabEnd {
		return c.getSlow(n)
	}
	cl := lookup(c.tabBase, n)
	l := c.list(cl)
	k := l.n - 1
	if uint(k) >= uint(len(l.bufs)) {
		return c.refill(int(cl), n) // k is -1: the list is empty
	}
	ptr := l.bufs[k]
	l.n = k
	l.allocs++
	clearIdle(ptr)
	return slice(ptr, n, l.size)
}

// getSlow is Get for sizes past the lookup table, or from a pool that is
// Bounded (passed on), zeroing or checked (passed on).
func (c *Cache) getSlow(n int) []byte {
	p := c.p
	if checked.Enabled || p.bounded != nil {
		return p.Get(n)
	}
	if uint(n) > uint(p.maxSize) {
		return p.getOversize(n)
	}
	cl := p.class(n)
	l := &c.all[cl]
	if l.n == 0 {
		return c.refill(cl, n)
	}
	l.n--
	l.allocs++
	return p.handOut(l.bufs[l.n], cl, n)
}

// Put is [Pool.Put] into the Cache.
func (c *Cache) Put(b []byte) {
	size := cap(b)
	if uint(size) >= c.tabEnd {
		c.putSlow(b)
		return
	}
	l := c.list(lookup(c.tabBase, size))
	ptr := unsafe.Pointer(unsafe.SliceData(b[:size]))
	bufs, k := l.bufs, l.n
	if l.size^size|int(uintptr(ptr)&l.mask) != 0 || uint(k) >= uint(len(bufs)) {
		c.putSlow(b) // not the class's capacity, a moved start, or a full list
		return
	}
	markIdle(ptr, c.secret)
	bufs[k] = ptr
	l.n = k + 1
}

// putSlow is Put for large or odd capacities, a moved start, a full list,
// or a pool that is Bounded, zeroing or checked.
func (c *Cache) putSlow(b []byte) {
	p := c.p
	if checked.Enabled || p.bounded != nil {
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
	l := &c.all[cl]
	if p.elastic.classes[cl].misaligned(ptr) {
		p.counts.badFrees.Add(1)
		return
	}
	p.markIdle(ptr)
	if l.n == len(l.bufs) {
		c.spill(cl)
	}
	l.bufs[l.n] = ptr
	l.n++
}

// refill fetches half a magazine of class cl from the pool and serves n
// from it, settling the class's counts on the way.
func (c *Cache) refill(cl, n int) []byte {
	p := c.p
	l := &c.all[cl]
	if l.bufs == nil {
		l.bufs = make([]unsafe.Pointer, p.magCap[cl])
	}
	want := l.bufs[:max(len(l.bufs)/2, 1)]
	got := 0
	e := &p.elastic.classes[cl]
	if !e.res.always { // a locked class has nothing in its sync.Pool, and a Get of an emptied one allocates
		got = e.takeFree(want)
	}
	got += e.popInto(want[got:])
	if got == 0 {
		mustServe(l.size)
		ptr := p.elastic.takeIdle(cl)
		if ptr == nil {
			return p.fallback(cl, n)
		}
		want[0] = ptr
		got = 1
	}
	e.cgets.Add(p.countSampled(want[:got]))
	ptr := want[got-1]
	want[got-1] = nil
	l.base += got // the list was empty: got buffers came in uncounted, one went out counted
	l.n = got - 1
	l.allocs++
	c.settle(cl)
	return p.handOut(ptr, cl, n)
}

// spill makes room in class cl's full list: it moves half of it to the
// pool, or gives a list not yet used its storage.
func (c *Cache) spill(cl int) {
	l := &c.all[cl]
	if len(l.bufs) == 0 {
		l.bufs = make([]unsafe.Pointer, c.p.magCap[cl])
		return
	}
	c.give(cl, l.n-max(l.n/2, 1))
}

// give hands the idle buffers of class cl's list from index keep on to the
// pool, and settles the class's counts.
func (c *Cache) give(cl, keep int) {
	p := c.p
	l := &c.all[cl]
	move := l.bufs[keep:l.n]
	e := &p.elastic.classes[cl]
	e.cputs.Add(p.countSampled(move))
	for _, ptr := range move {
		e.park(ptr)
	}
	clear(move)
	l.base -= l.n - keep
	l.n = keep
	c.settle(cl)
}

// settle brings the pool's figures for class cl up to date with the Cache:
// it adds the class's unfolded counters to the class's atomics, with the
// number of sampled buffers idle in the list (see [Pool.sampled]).
func (c *Cache) settle(cl int) {
	p, l := c.p, &c.all[cl]
	frees := l.allocs + uint64(l.n-l.base)
	e := &p.elastic.classes[cl]
	if l.allocs|frees != 0 {
		e.cacheAllocs.Add(l.allocs)
		e.cacheFrees.Add(frees)
	}
	if idle := p.countSampled(l.bufs[:l.n]); idle != c.idle[cl] {
		e.cidle.Add(idle - c.idle[cl])
		c.idle[cl] = idle
	}
	l.allocs, l.base = 0, l.n
}

// Release returns every buffer the Cache holds to the pool and folds its
// counters into the pool's stats. The Cache stays usable.
func (c *Cache) Release() {
	for cl := range c.all {
		l := &c.all[cl]
		if l.n == 0 && l.allocs == 0 && l.base == 0 && c.idle[cl] == 0 {
			continue
		}
		c.give(cl, 0)
	}
}
