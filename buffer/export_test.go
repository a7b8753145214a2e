package buffer

import (
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// Test-only access to internals.

// Debug reports whether the memkitdebug checks are compiled in.
const Debug = checked.Enabled

// AppendDec appends u in decimal by the package's own formatting.
func AppendDec(dst []byte, u uint64) []byte {
	if cap(dst)-len(dst) < 20 {
		dst = append(make([]byte, 0, len(dst)+20), dst...)
	}
	return appendUint(dst, u)
}

// Storage returns the address of b's storage.
func (b *Buffer) Storage() uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b.buf[:cap(b.buf)])))
}

// Owned reports whether b's storage came from bytepool.
func (b *Buffer) Owned() bool { return b.owned }

// EntrySize reports the bytes of a FixedPool buffer's bookkeeping.
func EntrySize() uintptr { return unsafe.Sizeof(fixedEntry{}) }

// SizeofJSON and SizeofBuffer are the sizes the docs quote.
const (
	SizeofJSON   = unsafe.Sizeof(JSON{})
	SizeofBuffer = unsafe.Sizeof(Buffer{})
)

// SizeofReader is the size the docs quote.
const SizeofReader = unsafe.Sizeof(Reader{})

// SetUntrackHook makes f run in the checked build's untrack between the
// last read of a closed header and the tracker's Free of its address, and
// returns the function that removes it.
func SetUntrackHook(f func()) (restore func()) {
	testHookUntrack = f
	return func() { testHookUntrack = nil }
}

// Salt is the salt of p's home hint.
func (p *FixedPool) Salt() uintptr { return p.salt.Load() }
