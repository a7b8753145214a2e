package bytepool

import (
	"fmt"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/stats"
)

// A Bounded pool's free lists. Its buffers live in a region that must stay
// whole, so it cannot keep them in a sync.Pool itself, which drops what it
// holds at GC time. It keeps a ticket per buffer there instead (see
// internal/shard.Idle): a 16-byte object holding the buffer's offset in
// the region, in the class's sync.Pool while the buffer is idle and in the
// buffer's slot (region.go) while it is out. A Get is a sync.Pool Get and
// a store into the slot, a Put the region checks, the slot's take and a
// sync.Pool Put: no lock and no locked instruction. A ticket the sync.Pool
// drops at a GC is collected, and a cleanup puts its buffer on the class's
// spare list, so a buffer idle across two GCs costs a ticket made again,
// and until the cleanup has run a Get may fall back to the heap (counted)
// although the region has an idle buffer. So may a Get while one buffer
// of the class per other P is idle: the one a P's sync.Pool keeps in its
// private slot, which only that P's goroutines reach.

// newBounded sets p up as a Bounded pool: its region.
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
	if cfg.sampleBits == 0 { // WithExactStats: every Get counted, one atomic add each
		for c := range r.classes {
			r.classes[c].idle.CountEvery()
		}
	}
	p.region = r
	p.quickBounded = !cfg.zeroed && !checked.Enabled
	return nil
}

// getBoundedQuick is Get of n <= tabMax from a Bounded pool that neither
// zeroes nor checks: a ticket from the class's sync.Pool, which Get stores
// in its buffer's slot.
func (p *Pool) getBoundedQuick(n int) []byte {
	c := p.lookup(n)
	r := p.region
	ci := r.classOf(c)
	t := ci.idle.Get()
	if t == nil {
		return p.getBounded(int(c), n)
	}
	return slice(unsafe.Add(r.start, t.Key()), n, ci.size)
}

// putBoundedQuick is Put of a capacity <= tabMax to a Bounded pool that
// neither zeroes nor checks: the region checks, the slot's take (the
// double-free check) and a sync.Pool Put of the ticket.
func (p *Pool) putBoundedQuick(b []byte) {
	size := cap(b)
	c := p.lookup(size)
	r := p.region
	ci := r.classOf(c)
	// The region checks, as isStart and slotAt make them, for a class
	// whose runs are one slab (every class up to 64 KiB, the lookup
	// table's): the slab's class, the divisibility test and the slot.
	off := uintptr(unsafe.Pointer(unsafe.SliceData(b[:size]))) - r.base
	if ci.size != size || off >= uintptr(len(r.mem)) {
		p.putSlow(b)
		return
	}
	sl := r.slabAt(off)
	in := off & (slabSize - 1)
	if sl.class.Load() != int32(c) || uint64(in)*ci.divisor > ci.divisor-1 {
		p.putSlow(b)
		return
	}
	t := slotOf(sl.slots.Load(), ci.slotIndex(in)).Take()
	if t == nil {
		panic(errDoubleFree)
	}
	ci.idle.Put(t)
}

// getBounded is Get of class c from a Bounded pool.
func (p *Pool) getBounded(c, n int) []byte {
	ptr := p.takeBounded(c)
	if ptr == nil {
		return p.fallback(c, n)
	}
	return p.handOutChecked(ptr, c, n)
}

// takeBounded takes an idle buffer of class c, carving a batch from the
// region when the class has none (and, in the checked build, emptying the
// quarantine when the region has none either), or returns nil when there
// is none.
func (p *Pool) takeBounded(c int) unsafe.Pointer {
	r := p.region
	for {
		if t := r.classes[c].idle.Get(); t != nil {
			return unsafe.Add(r.start, t.Key())
		}
		n, took := r.carve(c, p.sizes[c], max(magazineSize(p.sizes[c])/2, 1))
		r.charge(took) // with no lock held: the alert may call the pool
		if n > 0 {
			continue
		}
		if checked.Enabled && p.flushQuarantine() {
			continue
		}
		return nil
	}
}

// countFallback counts a Bounded pool's heap fallback buffer of class c.
func (p *Pool) countFallback(c int) {
	p.region.classes[c].fbAllocs.Add(1)
}

// release checks a Bounded pool's buffer on Put. It reports whether the
// buffer goes back to its class: false for a heap fallback buffer (counted
// as freed and dropped) and for a slice that is not a region buffer's
// start (counted as a bad free).
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
	return true
}

// dropFallback counts the Put of a Bounded pool's heap fallback buffer of
// class c (or foreign memory of a class's size, which looks the same) and
// lets the GC have it.
func (p *Pool) dropFallback(c, size int) {
	p.region.classes[c].fbFrees.Add(1)
	if p.budget != nil {
		p.budget.Release(int64(size))
	}
}

// pushBounded gives the region buffer at ptr, of class c, back to its
// class: its slot's ticket to the class's sync.Pool. It panics with
// "double free" if the buffer is idle already. held marks a buffer
// leaving the checked build's quarantine.
func (p *Pool) pushBounded(ptr unsafe.Pointer, c int, held bool) {
	r := p.region
	t := r.startSlot(ptr, c).Take()
	if t == nil {
		panic(errDoubleFree)
	}
	if held {
		r.classes[c].held.Add(-1)
	}
	r.classes[c].idle.Put(t)
}

// hold counts a buffer of class c entering the checked build's quarantine:
// out by its slot, but put back.
func (r *region) hold(c int) { r.classes[c].held.Add(1) }

// boundedRows fills a Bounded pool's class rows. The buffers out are
// counted by a load of each carved buffer's slot (exact when no Get or Put
// runs meanwhile); Allocs is the classes' ticket counts, low by at most 63
// per buffer carved (see internal/shard.Idle), plus the heap fallbacks,
// exact; Frees is Allocs less the buffers out.
func (p *Pool) boundedRows(rows []stats.ClassStats) {
	r := p.region
	for c := range rows {
		row := &rows[c]
		carved, slabs, out := r.census(c)
		ci := &r.classes[c]
		out -= min(out, int(ci.held.Load())) // in the quarantine: put back
		// Frees before allocs: a fallback is got before it is put.
		fbFrees := ci.fbFrees.Load()
		fbAllocs := ci.fbAllocs.Load()
		heapLive := sat(fbAllocs, fbFrees)
		row.LiveObjects = uint64(out) + heapLive
		row.Allocs = max(ci.idle.Gets()+fbAllocs, row.LiveObjects)
		row.Frees = row.Allocs - row.LiveObjects
		row.IdleObjects = uint64(carved - out)
		row.InUseBytes = row.LiveObjects * row.Size
		row.Grows = uint64(slabs)
		row.ReservedBytes = uint64(slabs)<<slabShift + heapLive*row.Size
	}
}
