package buffer

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"time"

	"github.com/memkit/memkit/internal/checked"
)

// Buffer's strconv-style appenders, and the decimal formatting they share
// with the JSON writer.

// AppendInt appends the integer i in the given base, as strconv.AppendInt.
// It returns nil; for a [Strict] [FixedPool] buffer without room,
// io.ErrShortWrite, and nothing is written.
func (b *Buffer) AppendInt(i int64, base int) error {
	if checked.Enabled {
		b.check("AppendInt")
	}
	if base == 10 && cap(b.buf)-len(b.buf) >= 20 {
		b.buf, b.lastRead = appendInt(b.buf, i), opInvalid
		return nil
	}
	b.reserve(65)
	return b.commit(strconv.AppendInt(b.buf, i, base))
}

// AppendUint appends the unsigned integer u in the given base, as
// strconv.AppendUint; errors as [Buffer.AppendInt].
func (b *Buffer) AppendUint(u uint64, base int) error {
	if checked.Enabled {
		b.check("AppendUint")
	}
	if base == 10 && cap(b.buf)-len(b.buf) >= 20 {
		b.buf, b.lastRead = appendUint(b.buf, u), opInvalid
		return nil
	}
	b.reserve(64)
	return b.commit(strconv.AppendUint(b.buf, u, base))
}

// AppendFloat appends f formatted as strconv.AppendFloat(dst, f, fmt, prec,
// bitSize) does; errors as [Buffer.AppendInt].
func (b *Buffer) AppendFloat(f float64, fmt byte, prec, bitSize int) error {
	if checked.Enabled {
		b.check("AppendFloat")
	}
	b.reserve(32)
	return b.commit(strconv.AppendFloat(b.buf, f, fmt, prec, bitSize))
}

// AppendBool appends "true" or "false"; errors as [Buffer.AppendInt].
func (b *Buffer) AppendBool(v bool) error {
	if checked.Enabled {
		b.check("AppendBool")
	}
	b.reserve(5)
	return b.commit(strconv.AppendBool(b.buf, v))
}

// AppendQuote appends s as a double-quoted Go string literal, as
// strconv.AppendQuote; errors as [Buffer.AppendInt].
func (b *Buffer) AppendQuote(s string) error {
	if checked.Enabled {
		b.check("AppendQuote")
	}
	b.reserve(len(s) + 2)
	return b.commit(strconv.AppendQuote(b.buf, s))
}

// AppendTime appends t formatted by layout, as t.AppendFormat; errors as
// [Buffer.AppendInt].
func (b *Buffer) AppendTime(t time.Time, layout string) error {
	if checked.Enabled {
		b.check("AppendTime")
	}
	b.reserve(len(layout) + 16)
	return b.commit(t.AppendFormat(b.buf, layout))
}

// reserve makes room for n more bytes if it can; a Strict buffer that
// cannot is left as it is, and commit decides.
func (b *Buffer) reserve(n int) {
	if cap(b.buf)-len(b.buf) < n {
		b.grow(n)
	}
}

// commit takes out, the result of an append to b.buf. If the append stayed
// within the storage (a reallocating append would have grown the capacity),
// out becomes the contents. Otherwise out lives in memory append took from
// the heap: its new bytes are copied into storage grown from bytepool, or,
// for a Strict buffer without room, dropped with io.ErrShortWrite (a
// refused write changes nothing, UnreadByte's state included).
func (b *Buffer) commit(out []byte) error {
	if cap(out) == cap(b.buf) {
		b.buf, b.lastRead = out, opInvalid
		return nil
	}
	tail := out[len(b.buf):]
	if !b.grow(len(tail)) {
		return b.refuse()
	}
	b.buf, b.lastRead = append(b.buf, tail...), opInvalid
	return nil
}

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
