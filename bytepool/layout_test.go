package bytepool

import (
	"testing"
	"unsafe"
)

// TestElastic_CountersOffTheReadLine checks that no cache line can hold
// both a field every Get or Put of a class reads and a counter that a Get
// or Put of a sampled buffer (or a Cache's refill and spill) writes, in
// the class or in the next one, wherever the class array starts: every
// such pair of fields is 64 bytes apart or more. With the counters on the
// line Put read the shortfall from, one P whose buffer was in the sample
// slowed every other P's Get+Put of the class from 12 to 24-31 ns.
func TestElastic_CountersOffTheReadLine(t *testing.T) {
	type field struct {
		name     string
		off, end uintptr
	}
	var f elasticFields
	read := []field{
		{"free", unsafe.Offsetof(f.free), unsafe.Offsetof(f.free) + unsafe.Sizeof(f.free)},
		{"size", unsafe.Offsetof(f.size), unsafe.Offsetof(f.size) + unsafe.Sizeof(f.size)},
		{"alignMask", unsafe.Offsetof(f.alignMask), unsafe.Offsetof(f.alignMask) + unsafe.Sizeof(f.alignMask)},
		{"short", unsafe.Offsetof(f.short), unsafe.Offsetof(f.short) + unsafe.Sizeof(f.short)},
	}
	written := []field{
		{"gets", unsafe.Offsetof(f.gets), unsafe.Offsetof(f.gets) + 8},
		{"puts", unsafe.Offsetof(f.puts), unsafe.Offsetof(f.puts) + 8},
		{"cgets", unsafe.Offsetof(f.cgets), unsafe.Offsetof(f.cgets) + 8},
		{"cputs", unsafe.Offsetof(f.cputs), unsafe.Offsetof(f.cputs) + 8},
		{"cidle", unsafe.Offsetof(f.cidle), unsafe.Offsetof(f.cidle) + 8},
	}
	const line = 64
	for _, r := range read {
		for _, w := range written {
			// The gap between the two, within the class and from the
			// written field to the read field of the next class.
			var gap uintptr
			if w.off >= r.end {
				gap = w.off - r.end
			} else {
				gap = r.off - w.end
			}
			if gap < line-1 {
				t.Errorf("%s (bytes %d-%d) and %s (%d-%d) are %d bytes apart: one cache line can hold both", r.name, r.off, r.end-1, w.name, w.off, w.end-1, gap)
			}
			if next := elasticStride + r.off - w.end; next < line-1 {
				t.Errorf("%s and the next class's %s are %d bytes apart", w.name, r.name, next)
			}
		}
	}
}
