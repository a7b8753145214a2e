package kv

import (
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// rangeCall calls fn with an entry for Range: in place, or, in the checked
// build, with copies poisoned when fn returns.
func (m *Map) rangeCall(fn func(key, value []byte) bool, key, value []byte) bool {
	if !checked.Enabled {
		return fn(key, value)
	}
	more := false
	m.lend("Range", key, func(k []byte) {
		m.lend("Range", value, func(v []byte) { more = fn(k, v) })
	})
	return more
}

// lend calls fn with a copy of b that the tracker records as allocated
// while fn runs and holds in its quarantine, poisoned, after: the checked
// build's View and Range, so that a slice kept past fn reads the poison,
// and a write through it is reported as a write after free.
func (m *Map) lend(op string, b []byte, fn func([]byte)) {
	c := make([]byte, len(b), len(b)+1) // never empty: each copy has its own address
	copy(c, b)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(c)))
	m.chk.Alloc(p, len(c), 0)
	fn(c)
	rec := m.chk.Free(op, p, 0)
	m.chk.Hold(op, rec, c[:cap(c)], func() {})
}
