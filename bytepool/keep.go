package bytepool

import (
	"encoding/binary"
	"unsafe"
)

// Keep is Put for a pool built on this one that holds idle buffers itself,
// as buffer.Pool keeps a Buffer's storage with its idle header: it counts
// b as put back and marks it idle (so a Put or a second Keep of it panics
// as a double free), but leaves it with the caller, which must call
// [Pool.Reuse] before it writes to b again, and may instead drop it, for
// the GC to collect. It reports false, doing nothing, unless the pool is
// Elastic, neither zeroing nor checked, and b a buffer of a class in the
// lookup table (up to 64 KiB by default): the caller then calls Put. Keep
// costs a class lookup and the idle mark, no sync.Pool operation.
func (p *Pool) Keep(b []byte) bool {
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

// Reuse is Get of a buffer the caller kept with [Pool.Keep]: it counts b
// as handed out again, clears its idle mark, and returns it with length 0
// and true. If b's idle mark is gone (something wrote into it after Keep)
// it returns nil and false, counting nothing: the caller must then drop b,
// which the GC collects.
func (p *Pool) Reuse(b []byte) ([]byte, bool) {
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
