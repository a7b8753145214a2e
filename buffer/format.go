package buffer

import (
	"encoding/binary"
	"math/bits"
)

// Decimal formatting that writes in place: the digit count comes first, so
// the digits go straight to their place in the buffer, two at a time,
// without the scratch array and copy of strconv.AppendInt.

// digits2 holds "00" to "99".
const digits2 = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

var pow10 = [20]uint64{
	1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// decLen returns the number of decimal digits of u (1 for 0). The bit
// length times log10(2) (1233/4096) gives the digit count or one less, and
// a compare with the power of ten settles it, without a branch: v -
// pow10[t] has its top bit set exactly when v < pow10[t] (pow10[19] is
// above 2^63, but then v is too, so the difference stays below 2^63).
func decLen(u uint64) int {
	v := u | 1
	t := bits.Len64(v) * 1233 >> 12
	return t + int((v-pow10[t])>>63^1)
}

// pairs holds "00" to "99" as little-endian uint16s, to store two digits
// at once.
var pairs = func() (p [100]uint16) {
	for i := range p {
		p[i] = uint16(digits2[2*i]) | uint16(digits2[2*i+1])<<8
	}
	return
}()

// putDec writes u in decimal into d, which has exactly decLen(u) bytes,
// two digits at a time from the end; below 2^32 in 32-bit arithmetic,
// whose division by 100 is cheaper.
func putDec(d []byte, u uint64) {
	i := len(d)
	for u >= 1<<32 {
		q := u / 100
		i -= 2
		binary.LittleEndian.PutUint16(d[i:], pairs[u-q*100])
		u = q
	}
	w := uint32(u)
	for w >= 100 {
		q := w / 100
		i -= 2
		binary.LittleEndian.PutUint16(d[i:], pairs[w-q*100])
		w = q
	}
	if w >= 10 {
		binary.LittleEndian.PutUint16(d, pairs[w])
		return
	}
	d[0] = byte('0' + w)
}

// appendUint appends u in decimal; dst must have room for 20 more bytes.
func appendUint(dst []byte, u uint64) []byte {
	l := len(dst)
	n := decLen(u)
	dst = dst[:l+n]
	putDec(dst[l:], u)
	return dst
}

// appendInt appends i in decimal; dst must have room for 20 more bytes.
func appendInt(dst []byte, i int64) []byte {
	u := uint64(i)
	if i < 0 {
		dst = append(dst, '-')
		u = -u
	}
	return appendUint(dst, u)
}
