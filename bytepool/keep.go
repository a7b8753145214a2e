package bytepool

import (
	"encoding/binary"
	"unsafe"

	"github.com/memkit/memkit/internal/keep"
)

// buffer.Pool keeps a Buffer's storage with its idle header; these are
// the two operations it needs, given to it through internal/keep rather
// than exported.
func init() {
	keep.Keep = func(pool any, b []byte) bool { return pool.(*Pool).keep(b) }
	keep.Reuse = func(pool any, b []byte) ([]byte, bool) { return pool.(*Pool).reuse(b) }
}

// keep is [keep.Keep] (internal/keep).
func (p *Pool) keep(b []byte) bool {
	size := cap(b)
	if uint(size) >= p.tabEnd || !p.plain {
		return false
	}
	e := p.elasticOf(p.lookup(size))
	ptr := unsafe.Pointer(unsafe.SliceData(b[:size]))
	if e.size != size || e.misaligned(ptr) {
		return false
	}
	p.markIdle(ptr)
	if p.sampled(ptr) {
		e.puts.Add(1)
	}
	return true
}

// reuse is [keep.Reuse] (internal/keep).
func (p *Pool) reuse(b []byte) ([]byte, bool) {
	size := cap(b)
	if uint(size) >= p.tabEnd || !p.plain {
		return nil, false
	}
	ptr := unsafe.Pointer(unsafe.SliceData(b[:size]))
	if binary.NativeEndian.Uint64((*[8]byte)(ptr)[:]) != uint64(uintptr(ptr))^p.secret {
		return nil, false
	}
	if p.sampled(ptr) {
		p.elasticOf(p.lookup(size)).gets.Add(1)
	}
	clearIdle(ptr)
	return b[:0], true
}
