package bytepool

import "unsafe"

// Test-only access to internals.

// SampleScale reports how many buffers one sampled buffer stands for.
func (p *Pool) SampleScale() uint64 { return p.scale() }

// RegionSize reports the bytes a Bounded pool reserved, or 0.
func (p *Pool) RegionSize() int {
	if p.bounded == nil {
		return 0
	}
	return len(p.bounded.mem)
}

// MachineMemory is machineMemory.
var MachineMemory = machineMemory

// HeapFallback reports whether b, a buffer of a Bounded pool, came from
// the heap rather than the region (such a buffer is dropped on Put).
func (p *Pool) HeapFallback(b []byte) bool {
	return p.bounded != nil && !p.bounded.contains(unsafe.Pointer(unsafe.SliceData(b[:cap(b)])))
}

// SetClock makes an Elastic pool's tending read now instead of the
// monotonic clock, and starts a retention period at now().
func (p *Pool) SetClock(now func() int64) {
	r := &p.elastic.ret
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clock = now
	r.start = now()
}

// Tend runs the timer's tending step.
func (p *Pool) Tend() bool { return p.elastic.tend(true) }

// Reserve reports how many idle buffers class c's reserve holds, and how
// many it has given back.
func (p *Pool) Reserve(c int) (held int, gone uint64) {
	r := &p.elastic.classes[c].res
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bufs), r.gone
}

// HotGets is hotGets.
var HotGets = hotGets

// SlotIndexes returns the slot index of each buffer of a one-slab run of
// the Bounded pool's class c, in buffer order, and the run's slot count.
func (p *Pool) SlotIndexes(c int) (idx []uintptr, nslots int, oneSlab bool) {
	ci := &p.bounded.classes[c]
	for off := 0; off+ci.size <= ci.runBytes; off += ci.size {
		idx = append(idx, ci.slotIndex(uintptr(off)))
	}
	return idx, ci.nslots, ci.runBytes == slabSize
}

// CarveBatch is how many buffers of size bytes a Bounded pool carves at a
// time.
func CarveBatch(size int) int { return max(magazineSize(size)/2, 1) }

// RunSlots returns the address of the first slot of the run that holds b,
// a buffer of the Bounded pool p, and the run's slot count.
func (p *Pool) RunSlots(b []byte) (first uintptr, nslots int) {
	r := &p.bounded.region
	off := uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)]))) - r.base
	sl := r.slabAt(off)
	run := uintptr(sl.runStart.Load())
	return uintptr(unsafe.Pointer(r.slabs[run].slots.Load())), r.classes[sl.class.Load()].nslots
}
