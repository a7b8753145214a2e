package bytepool

import (
	"fmt"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/stats"
)

// The Bounded engine: everything a Bounded pool does that an Elastic one
// does not lives in this file and region.go; the Pool façade (pool.go)
// finds the class, serves what is common (sizes above the classes, the
// checked build's tracking) and calls the engine directly, never through
// an interface.
//
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

// boundedEngine is a Bounded pool's engine: its region, with the slots and
// tickets of its buffers, and the façade it serves.
type boundedEngine struct {
	region
	p *Pool // the façade: class table, shared counters, budget, checked-build tracker
}

// newBounded returns the engine of p, a Bounded pool configured by cfg,
// setting p's budget if cfg asks for an alert.
func newBounded(p *Pool, cfg *config) (*boundedEngine, error) {
	size := cfg.regionSize()
	if size < slabSize || size > maxBudget {
		return nil, fmt.Errorf("%sWithBudget(%d): a Bounded pool's region must be between 64KiB and %s", prefix, size, stats.FormatBytes(uint64(maxBudget)))
	}
	if cfg.HasAlert() {
		threshold, fn := cfg.Alert()
		p.budget = budget.New(size>>slabShift<<slabShift, threshold, fn)
	}
	b := &boundedEngine{p: p}
	if err := b.region.init(size, p.sizes, p.budget); err != nil {
		return nil, err
	}
	return b, nil
}

// get is Get of n up to the largest class, of class c, from a pool that
// neither zeroes nor checks: a ticket from the class's sync.Pool, which
// Get stores in its buffer's slot.
func (b *boundedEngine) get(c uint8, n int) []byte {
	ci := b.classOf(c)
	t := ci.idle.Get()
	if t == nil {
		return b.getClass(int(c), n)
	}
	return slice(unsafe.Add(b.start, t.Key()), n, ci.size)
}

// put is Put of a capacity <= tabMax, whose class is c, to a pool that
// neither zeroes nor checks: the region checks, the slot's take (the
// double-free check) and a sync.Pool Put of the ticket.
func (b *boundedEngine) put(c uint8, buf []byte) {
	size := cap(buf)
	ci := b.classOf(c)
	// The region checks, as isStart and slotAt make them, for a class
	// whose runs are one slab (every class up to 64 KiB, the lookup
	// table's): the slab's class, the divisibility test and the slot.
	off := uintptr(unsafe.Pointer(unsafe.SliceData(buf[:size]))) - b.base
	if ci.size != size || off >= uintptr(len(b.mem)) {
		b.p.putSlow(buf)
		return
	}
	sl := b.slabAt(off)
	in := off & (slabSize - 1)
	if sl.class.Load() != int32(c) || uint64(in)*ci.divisor > ci.divisor-1 {
		b.p.putSlow(buf)
		return
	}
	t := slotOf(sl.slots.Load(), ci.slotIndex(in)).Take()
	if t == nil {
		panic(errDoubleFree)
	}
	ci.idle.Put(t)
}

// putRun is put of a capacity past the lookup table, up to the largest
// class, whose runs span slabs: the class is the slab's, so no class
// arithmetic; the offset is tested in its run, and the slot is the run's.
// It writes out isStart and slotAt's checks, as put does for one-slab
// runs: calling them (bounds checks, the slab and the run's start read
// twice) made a 1 MiB Get+Put 12% slower (19.1 against 16.8 ns, count 6).
// put itself does not read the run's start: that cost the table's
// classes 3-6%.
func (b *boundedEngine) putRun(buf []byte) {
	size := cap(buf)
	off := uintptr(unsafe.Pointer(unsafe.SliceData(buf[:size]))) - b.base
	if off >= uintptr(len(b.mem)) {
		b.p.putSlow(buf)
		return
	}
	sl := b.slabAt(off)
	c := sl.class.Load()
	if c < 0 {
		b.p.putSlow(buf)
		return
	}
	ci := b.classOf(uint8(c))
	run := uintptr(sl.runStart.Load()) << slabShift
	in := off - run
	if ci.size != size || uint64(in)*ci.divisor > ci.divisor-1 {
		b.p.putSlow(buf)
		return
	}
	t := slotOf(b.slabAt(run).slots.Load(), ci.slotIndex(in)).Take()
	if t == nil {
		panic(errDoubleFree)
	}
	ci.idle.Put(t)
}

// getClass is Get of class c past get: any size of a zeroing or checked
// pool, or a class with no ticket in its sync.Pool.
func (b *boundedEngine) getClass(c, n int) []byte {
	ptr := b.take(c)
	if ptr == nil {
		return b.p.fallback(c, n)
	}
	return b.p.handOutChecked(ptr, c, n)
}

// take takes an idle buffer of class c, carving a batch from the region
// when the class has none (and, in the checked build, emptying the
// quarantine when the region has none either), or returns nil when there
// is none.
func (b *boundedEngine) take(c int) unsafe.Pointer {
	size := b.p.sizes[c]
	for {
		if t := b.classes[c].idle.Get(); t != nil {
			return unsafe.Add(b.start, t.Key())
		}
		n, took := b.carve(c, size, max(magazineSize(size)/2, 1))
		b.charge(took) // with no lock held: the alert may call the pool
		if n > 0 {
			continue
		}
		if checked.Enabled && b.p.flushQuarantine() {
			continue
		}
		return nil
	}
}

// noteFallback counts a heap fallback buffer of class c, and charges the
// budget for it.
func (b *boundedEngine) noteFallback(c int, buf []byte) {
	b.classes[c].fbAllocs.Add(1)
	if b.p.budget != nil {
		b.p.budget.Charge(int64(cap(buf)))
	}
}

// putClass is Put of a buffer whose capacity is class c's, past put: a
// zeroing or checked pool, or a buffer put checks no further.
func (b *boundedEngine) putClass(buf []byte, ptr unsafe.Pointer, c int) {
	var rec *checked.Record
	if checked.Enabled {
		rec = b.p.checkPut(buf)
	}
	if !b.release(ptr, c, cap(buf)) {
		return
	}
	if checked.Enabled {
		b.hold(rec, ptr, c, cap(buf))
		return
	}
	b.push(ptr, c, false)
}

// release checks a buffer on Put. It reports whether the buffer goes back
// to its class: false for a heap fallback buffer (counted as freed and
// dropped) and for a slice that is not a region buffer's start (counted as
// a bad free).
func (b *boundedEngine) release(ptr unsafe.Pointer, c, size int) bool {
	if !b.contains(ptr) {
		b.dropFallback(c, size)
		return false
	}
	if !b.isStart(ptr, c) {
		b.p.counts.badFrees.Add(1)
		return false
	}
	return true
}

// dropFallback counts the Put of a heap fallback buffer of class c (or
// foreign memory of a class's size, which looks the same) and lets the GC
// have it.
func (b *boundedEngine) dropFallback(c, size int) {
	b.classes[c].fbFrees.Add(1)
	if b.p.budget != nil {
		b.p.budget.Release(int64(size))
	}
}

// push gives the region buffer at ptr, of class c, back to its class: its
// slot's ticket to the class's sync.Pool. It panics with "double free" if
// the buffer is idle already. held marks a buffer leaving the checked
// build's quarantine.
func (b *boundedEngine) push(ptr unsafe.Pointer, c int, held bool) {
	t := b.startSlot(ptr, c).Take()
	if t == nil {
		panic(errDoubleFree)
	}
	if held {
		b.classes[c].held.Add(-1)
	}
	b.classes[c].idle.Put(t)
}

// hold keeps the buffer at ptr, of class c and size bytes, just put, in
// the checked build's quarantine (see [Pool.hold]): out by its slot, but
// counted as put back.
func (b *boundedEngine) hold(rec *checked.Record, ptr unsafe.Pointer, c, size int) {
	b.classes[c].held.Add(1)
	b.p.hold(rec, ptr, size, func() { b.push(ptr, c, true) })
}

// rows fills the pool's class rows, exact when no Get or Put runs
// meanwhile: the buffers out and their Gets are a load of each carved
// buffer's slot, where each Get counts itself (see internal/shard.Idle);
// Allocs adds the heap fallbacks, Frees is Allocs less the buffers out.
func (b *boundedEngine) rows(rows []stats.ClassStats) {
	for c := range rows {
		row := &rows[c]
		carved, slabs, out, gets := b.census(c)
		ci := &b.classes[c]
		out -= min(out, int(ci.held.Load())) // in the quarantine: put back
		// Frees before allocs: a fallback is got before it is put.
		fbFrees := ci.fbFrees.Load()
		fbAllocs := ci.fbAllocs.Load()
		heapLive := sat(fbAllocs, fbFrees)
		row.LiveObjects = uint64(out) + heapLive
		row.Allocs = max(gets+fbAllocs, row.LiveObjects)
		row.Frees = row.Allocs - row.LiveObjects
		row.IdleObjects = uint64(carved - out)
		row.InUseBytes = row.LiveObjects * row.Size
		row.Grows = uint64(slabs)
		row.ReservedBytes = uint64(slabs)<<slabShift + heapLive*row.Size
	}
}

// untaken is the bytes of the region no class has taken yet: reserved at
// New, so ReservedBytes counts them beside the classes' rows.
func (b *boundedEngine) untaken() uint64 {
	return uint64(len(b.mem) - b.usedSlabs()<<slabShift)
}
