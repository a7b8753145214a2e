package checked

import "encoding/binary"

// Poison and guard patterns. Freed memory is filled with PoisonByte and
// checked when handed out again; the slack after an allocation, between its
// length and the end of the memory that holds it (its class size), is
// filled with GuardByte and checked on free.
const (
	PoisonByte = 0xdb
	GuardByte  = 0xfd
)

// Fill sets every byte of b to v.
func Fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// IndexNot returns the index of the first byte of b that is not v, or -1,
// comparing eight bytes at a time: every poison and guard check uses it.
func IndexNot(b []byte, v byte) int {
	w := uint64(v) * 0x0101010101010101
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != w {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] != v {
			return i
		}
	}
	return -1
}
