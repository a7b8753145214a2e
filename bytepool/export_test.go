package bytepool

import "unsafe"

// Test-only access to internals.

// SampleScale reports how many buffers one sampled buffer stands for.
func (p *Pool) SampleScale() uint64 { return p.scale() }

// RegionSize reports the bytes a Bounded pool reserved, or 0.
func (p *Pool) RegionSize() int {
	if p.region == nil {
		return 0
	}
	return len(p.region.mem)
}

// MachineMemory is machineMemory.
var MachineMemory = machineMemory

// HeapFallback reports whether b, a buffer of a Bounded pool, came from
// the heap rather than the region (such a buffer is dropped on Put).
func (p *Pool) HeapFallback(b []byte) bool {
	return p.region != nil && !p.region.contains(unsafe.Pointer(unsafe.SliceData(b[:cap(b)])))
}
