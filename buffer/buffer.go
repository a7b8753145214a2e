package buffer

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/sysmem"
)

// A Buffer has the interfaces of a bytes.Buffer, and is an io.Closer.
var (
	_ io.Reader                                 = (*Buffer)(nil)
	_ io.ByteScanner                            = (*Buffer)(nil)
	_ io.RuneScanner                            = (*Buffer)(nil)
	_ io.WriterTo                               = (*Buffer)(nil)
	_ io.Writer                                 = (*Buffer)(nil)
	_ io.StringWriter                           = (*Buffer)(nil)
	_ io.ByteWriter                             = (*Buffer)(nil)
	_ io.ReaderFrom                             = (*Buffer)(nil)
	_ io.Closer                                 = (*Buffer)(nil)
	_ fmt.Stringer                              = (*Buffer)(nil)
	_ interface{ WriteRune(rune) (int, error) } = (*Buffer)(nil)
)

// Buffer is a growable byte buffer whose storage comes from bytepool and
// goes back there on [Buffer.Free]: bytes.Buffer's methods, strconv-style
// appenders, and the Close of a [FixedPool] checkout.
//
// A Buffer is not safe for concurrent use; give each goroutine its own (a
// Buffer may be handed to another goroutine with the usual synchronization,
// and freed there). The zero value is an empty Buffer ready to use: it takes
// storage from the default [Pool]'s bytepool on its first write, and Free
// gives the storage back and leaves it empty and usable again. A Buffer must
// not be copied after first use: two copies would share, and both return,
// one storage.
//
// Writes append in amortized O(1), a copy of the bytes written: when the
// storage is full, the contents move to storage twice as large, taken from
// bytepool, and the old storage goes back to bytepool at once. The first
// write of a Buffer from [Pool.Get] takes storage of the pool's default
// size, calibrated to the lengths Buffers of that pool reach, so that most
// Buffers never move. Storage is rounded up to bytepool's class (under 20%
// waste) and is not zeroed: it holds what its previous user wrote past the
// length. It lives on the Go heap, and idle storage decays back to the GC
// (bytepool's Elastic policy). The header itself (64 bytes on 64-bit
// platforms) is recycled by [Pool.Get], so Get, writes that fit, and Free
// allocate nothing.
//
// A Buffer reads like a bytes.Buffer too: [Buffer.Read] consumes from the
// front, and [Buffer.Bytes] and [Buffer.Len] cover the unread part.
//
// After Free or Close, a Buffer must not be used: its header may already
// serve another Get. With the memkitdebug build tag, any use then panics
// with a report of a stale handle ("use of a Buffer after Free or Close")
// and the stacks of the Buffer's Get and Free, and headers are never
// reused (see the package's "Checked build").
type Buffer struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	buf  []byte // contents: buf[off:]; start and cap are the storage's own
	off  int
	pool *Pool      // where storage comes from; nil: the default Pool
	fp   *FixedPool // the FixedPool of a checkout; nil otherwise

	index int32  // the FixedPool buffer's index, or -1 for a miss
	state uint32 // stLive or stFree; atomic for a FixedPool miss
	uses  uint32 // storage returns, for calibration sampling
	owned bool   // buf is bytepool storage, returned on Free
	hdr   bool   // the header comes from Pool.Get and goes back there
	probe [1]byte

	// lastRead is what the last call did, as bytes.Buffer's, so that
	// UnreadByte and UnreadRune know what they may undo: opInvalid after
	// anything but a read, opRead after a read of at least one byte, or the
	// size of the rune ReadRune read.
	lastRead int8
}

const (
	stLive uint32 = iota
	stFree
)

// lastRead values, bytes.Buffer's.
const (
	opRead    int8 = -1 // a read other than ReadRune
	opInvalid int8 = 0  // not a read
)

// keepMax is the largest storage an idle Buffer header keeps for its next
// Get; larger storage goes back to bytepool on Free.
const keepMax = 64 << 10

// minRead is how much room ReadFrom makes before each Read, as bytes.Buffer.
const minRead = 512

const maxInt = int(^uint(0) >> 1)

// check panics if b was freed; only in the checked build.
func (b *Buffer) check(op string) {
	if b.state == stFree {
		b.stale(op)
	}
}

// Len returns the number of unread bytes: len(b.Bytes()).
func (b *Buffer) Len() int {
	if checked.Enabled {
		b.check("Len")
	}
	return len(b.buf) - b.off
}

// Cap returns the capacity of the storage, read part included.
func (b *Buffer) Cap() int {
	if checked.Enabled {
		b.check("Cap")
	}
	return cap(b.buf)
}

// Available returns how many bytes can be written without growing the
// storage: Cap() - Len() less the bytes already read. For a [Strict]
// [FixedPool] buffer it is what the pool's size still lets in, once read
// bytes are slid out (a write slides them).
func (b *Buffer) Available() int {
	if checked.Enabled {
		b.check("Available")
	}
	return cap(b.buf) - len(b.buf)
}

// Bytes returns the unread bytes. The slice aliases the storage: it is
// valid until the next write, Read, Reset, Truncate, Grow, Free or Close.
func (b *Buffer) Bytes() []byte {
	if checked.Enabled {
		b.check("Bytes")
	}
	return b.buf[b.off:]
}

// AvailableBuffer returns an empty slice with b.Available() capacity, the
// storage after the contents, as bytes.Buffer.AvailableBuffer: append to it
// and pass the result to an immediately succeeding [Buffer.Write], which
// then copies nothing. It is valid until the next write, Grow, Free or
// Close.
func (b *Buffer) AvailableBuffer() []byte {
	if checked.Enabled {
		b.check("AvailableBuffer")
	}
	return b.buf[len(b.buf):]
}

// String returns a copy of the unread bytes as a string, or "<nil>" for a
// nil *Buffer (as bytes.Buffer). It allocates; write b.Bytes() where a
// []byte will do.
func (b *Buffer) String() string {
	if b == nil {
		return "<nil>"
	}
	if checked.Enabled {
		b.check("String")
	}
	return string(b.buf[b.off:])
}

// Reset empties the buffer and keeps its storage for the next writes.
func (b *Buffer) Reset() {
	if checked.Enabled {
		b.check("Reset")
	}
	b.buf = b.buf[:0]
	b.off = 0
	b.lastRead = opInvalid
}

// Truncate discards all but the first n unread bytes, keeping the storage.
// It panics with "memkit/buffer: Truncate out of range" unless
// 0 <= n <= b.Len().
func (b *Buffer) Truncate(n int) {
	if checked.Enabled {
		b.check("Truncate")
	}
	if n == 0 {
		b.Reset()
		return
	}
	b.lastRead = opInvalid
	if n < 0 || n > len(b.buf)-b.off {
		panic(msgTruncate)
	}
	b.buf = b.buf[:b.off+n]
}

// Grow makes room for at least n more bytes, so that the next n bytes of
// writes neither allocate nor move the contents, as bytes.Buffer.Grow. It
// panics with "memkit/buffer: negative size" if n < 0, and with
// bytes.ErrTooLarge, the Buffer unchanged, if the storage cannot be had: n
// more bytes would overflow an int, or the system cannot serve them now
// (asked before anything is reserved, so the process never meets the
// runtime's fatal out-of-memory). For a [Strict] [FixedPool] buffer that n
// more bytes would take past the pool's size, or an [Expand] one whose
// budget refuses the growth, Grow changes nothing: the writes that do not
// fit are then refused with io.ErrShortWrite ([Buffer.Available] tells the
// room there is).
func (b *Buffer) Grow(n int) {
	if checked.Enabled {
		b.check("Grow")
	}
	if n < 0 {
		panic(msgNegative)
	}
	if n > cap(b.buf)-len(b.buf) {
		b.grow(n)
	}
}

// Write appends p. It returns len(p), nil; for a [Strict] [FixedPool]
// buffer that p would take past the pool's size, 0, io.ErrShortWrite, and
// nothing is written. It panics with bytes.ErrTooLarge, as [Buffer.Grow],
// if the storage p needs cannot be had.
func (b *Buffer) Write(p []byte) (int, error) {
	if checked.Enabled {
		b.check("Write")
	}
	if len(p) > cap(b.buf)-len(b.buf) && !b.grow(len(p)) {
		return 0, b.refuse()
	}
	b.lastRead = opInvalid
	// A reslice and a copy rather than append: only the length is stored
	// back, with no write barrier for the unchanged pointer.
	l := len(b.buf)
	b.buf = b.buf[:l+len(p)]
	copy(b.buf[l:], p)
	return len(p), nil
}

// WriteString appends s, as [Buffer.Write].
func (b *Buffer) WriteString(s string) (int, error) {
	if checked.Enabled {
		b.check("WriteString")
	}
	if len(s) > cap(b.buf)-len(b.buf) && !b.grow(len(s)) {
		return 0, b.refuse()
	}
	b.lastRead = opInvalid
	l := len(b.buf)
	b.buf = b.buf[:l+len(s)]
	copy(b.buf[l:], s)
	return len(s), nil
}

// WriteByte appends c, as [Buffer.Write].
func (b *Buffer) WriteByte(c byte) error {
	if checked.Enabled {
		b.check("WriteByte")
	}
	l := len(b.buf)
	if l == cap(b.buf) {
		if !b.grow(1) {
			return b.refuse()
		}
		l = len(b.buf)
	}
	b.lastRead = opInvalid
	b.buf = b.buf[:l+1]
	b.buf[l] = c
	return nil
}

// WriteRune appends the UTF-8 encoding of r (of utf8.RuneError if r is not
// a valid code point), as bytes.Buffer.WriteRune, and returns its length;
// errors as [Buffer.Write].
func (b *Buffer) WriteRune(r rune) (int, error) {
	if uint32(r) < utf8.RuneSelf {
		if err := b.WriteByte(byte(r)); err != nil {
			return 0, err
		}
		return 1, nil
	}
	if checked.Enabled {
		b.check("WriteRune")
	}
	n := utf8.RuneLen(r)
	if n < 0 {
		n = utf8.RuneLen(utf8.RuneError)
	}
	if n > cap(b.buf)-len(b.buf) && !b.grow(n) {
		return 0, b.refuse()
	}
	b.lastRead = opInvalid
	b.buf = utf8.AppendRune(b.buf, r)
	return n, nil
}

// Read reads up to len(p) unread bytes into p, as bytes.Buffer.Read: when
// nothing is left it empties the buffer and returns io.EOF (0, nil if p is
// empty).
func (b *Buffer) Read(p []byte) (int, error) {
	if checked.Enabled {
		b.check("Read")
	}
	b.lastRead = opInvalid
	if b.off == len(b.buf) {
		b.buf = b.buf[:0]
		b.off = 0
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, b.buf[b.off:])
	b.off += n
	if n > 0 {
		b.lastRead = opRead
	}
	return n, nil
}

// Next returns the next n unread bytes, or all of them if fewer are left,
// and consumes them as [Buffer.Read] would, as bytes.Buffer.Next. The slice
// aliases the storage: it is valid until the next read or write. It panics
// with "memkit/buffer: negative read count" if n < 0.
func (b *Buffer) Next(n int) []byte {
	if checked.Enabled {
		b.check("Next")
	}
	if n < 0 {
		panic(msgNegativeCnt)
	}
	b.lastRead = opInvalid
	n = min(n, len(b.buf)-b.off)
	data := b.buf[b.off : b.off+n]
	b.off += n
	if n > 0 {
		b.lastRead = opRead
	}
	return data
}

// Peek returns the next n unread bytes without consuming them, as
// bytes.Buffer.Peek: all the unread bytes and io.EOF if fewer than n are
// left. The slice aliases the storage: it is valid until the next read or
// write. It panics with "memkit/buffer: negative read count" if n < 0.
func (b *Buffer) Peek(n int) ([]byte, error) {
	if checked.Enabled {
		b.check("Peek")
	}
	if n < 0 {
		panic(msgNegativeCnt)
	}
	if len(b.buf)-b.off < n {
		return b.buf[b.off:], io.EOF
	}
	return b.buf[b.off : b.off+n], nil
}

// ReadByte consumes and returns the next unread byte, or io.EOF if none is
// left (emptying the buffer then, as [Buffer.Read]).
func (b *Buffer) ReadByte() (byte, error) {
	if checked.Enabled {
		b.check("ReadByte")
	}
	if b.off == len(b.buf) {
		b.buf, b.off, b.lastRead = b.buf[:0], 0, opInvalid
		return 0, io.EOF
	}
	c := b.buf[b.off]
	b.off++
	b.lastRead = opRead
	return c, nil
}

// ReadRune consumes and returns the next UTF-8-encoded code point and its
// size, as bytes.Buffer.ReadRune: io.EOF if nothing is left, and
// utf8.RuneError of size 1 for a byte that does not start a valid encoding.
func (b *Buffer) ReadRune() (rune, int, error) {
	if checked.Enabled {
		b.check("ReadRune")
	}
	if b.off == len(b.buf) {
		b.buf, b.off, b.lastRead = b.buf[:0], 0, opInvalid
		return 0, 0, io.EOF
	}
	if c := b.buf[b.off]; c < utf8.RuneSelf {
		b.off++
		b.lastRead = 1
		return rune(c), 1, nil
	}
	r, n := utf8.DecodeRune(b.buf[b.off:])
	b.off += n
	b.lastRead = int8(n)
	return r, n, nil
}

// UnreadRune gives back the rune the last call read, if that call was a
// [Buffer.ReadRune] that succeeded; otherwise it returns an error
// ("memkit/buffer: UnreadRune: previous operation was not a successful
// ReadRune") and changes nothing, as bytes.Buffer.UnreadRune.
func (b *Buffer) UnreadRune() error {
	if checked.Enabled {
		b.check("UnreadRune")
	}
	if b.lastRead <= opInvalid {
		return errUnreadRune
	}
	if b.off >= int(b.lastRead) {
		b.off -= int(b.lastRead)
	}
	b.lastRead = opInvalid
	return nil
}

// UnreadByte gives back the last byte read, if the last call was a read
// that read at least one byte ([Buffer.Read], [Buffer.Next], ReadByte,
// ReadRune, ReadBytes, ReadString); otherwise it returns an error
// ("memkit/buffer: UnreadByte: previous operation was not a successful
// read") and changes nothing, as bytes.Buffer.UnreadByte.
func (b *Buffer) UnreadByte() error {
	if checked.Enabled {
		b.check("UnreadByte")
	}
	if b.lastRead == opInvalid {
		return errUnreadByte
	}
	b.lastRead = opInvalid
	if b.off > 0 {
		b.off--
	}
	return nil
}

// ReadBytes consumes the unread bytes up to and including the first delim
// and returns a copy of them, as bytes.Buffer.ReadBytes: if delim does not
// come, all that is left and io.EOF. The error is nil exactly when the
// result ends in delim. It allocates the copy.
func (b *Buffer) ReadBytes(delim byte) ([]byte, error) {
	if checked.Enabled {
		b.check("ReadBytes")
	}
	line, err := b.readSlice(delim)
	return append([]byte(nil), line...), err
}

// ReadString is [Buffer.ReadBytes] returning a string.
func (b *Buffer) ReadString(delim byte) (string, error) {
	if checked.Enabled {
		b.check("ReadString")
	}
	line, err := b.readSlice(delim)
	return string(line), err
}

// readSlice consumes the unread bytes up to and including the first delim
// and returns them as a view of the storage.
func (b *Buffer) readSlice(delim byte) ([]byte, error) {
	var err error
	end := len(b.buf)
	if i := bytes.IndexByte(b.buf[b.off:], delim); i >= 0 {
		end = b.off + i + 1
	} else {
		err = io.EOF
	}
	line := b.buf[b.off:end]
	b.off = end
	b.lastRead = opRead
	return line, err
}

// WriteTo writes the unread bytes to w until none is left or w fails, as
// bytes.Buffer.WriteTo: the bytes written are consumed, and a short write
// without an error returns io.ErrShortWrite.
func (b *Buffer) WriteTo(w io.Writer) (int64, error) {
	if checked.Enabled {
		b.check("WriteTo")
	}
	b.lastRead = opInvalid
	m := len(b.buf) - b.off
	if m == 0 {
		return 0, nil
	}
	n, err := w.Write(b.buf[b.off:])
	if n > m {
		panic(msgBadWrite)
	}
	b.off += n
	if err != nil {
		return int64(n), err
	}
	if n != m {
		return int64(n), io.ErrShortWrite
	}
	b.buf = b.buf[:0]
	b.off = 0
	return int64(n), nil
}

// ReadFrom appends what r yields until io.EOF, which it does not return,
// or another error, which it does. It never reads a byte it cannot keep: what
// the buffer did not take is still in r.
//
// A [FixedPool] buffer fills its storage first. When it is full it must
// learn whether r has more before it expands: from an io.ByteScanner
// (bufio.Reader, bytes.Reader, strings.Reader, ...) it reads one byte and,
// if the buffer cannot take it, unreads it, so a body of exactly the pool's
// size never expands and never fails. From another reader, an [Expand]
// buffer without a budget reads one byte and expands if it comes; a
// [Strict] buffer, or an Expand one with a budget, cannot give a byte back,
// so it does not read past a full buffer: Strict returns io.ErrShortWrite
// (even if r happened to be at its end), Expand with a budget expands
// first, or returns io.ErrShortWrite if the budget refuses. Other buffers
// make room for 512 bytes before each Read, as bytes.Buffer.
func (b *Buffer) ReadFrom(r io.Reader) (int64, error) {
	if checked.Enabled {
		b.check("ReadFrom")
	}
	b.lastRead = opInvalid
	var total int64
	for {
		if len(b.buf) == cap(b.buf) {
			if b.fp != nil {
				m, err := b.readPastFull(r)
				total += int64(m)
				if err == io.EOF {
					return total, nil
				}
				if err != nil {
					return total, err
				}
				continue
			}
			b.grow(minRead)
		} else if b.fp == nil && cap(b.buf)-len(b.buf) < minRead {
			b.grow(minRead)
		}
		l := len(b.buf)
		m, err := r.Read(b.buf[l:cap(b.buf)])
		if m < 0 {
			panic(errNegativeRead)
		}
		if m > cap(b.buf)-l {
			panic(errBadRead)
		}
		b.buf = b.buf[:l+m]
		total += int64(m)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// readPastFull makes room in a full FixedPool buffer for ReadFrom, reading
// at most one byte of r, and only one the buffer keeps. It returns the bytes
// appended (0 or 1) and r's error (io.EOF: r ended with the buffer full), or
// io.ErrShortWrite if the buffer may not grow.
func (b *Buffer) readPastFull(r io.Reader) (int, error) {
	if b.off > 0 || b.owned {
		// A slide of the unread bytes, or the growth of storage already
		// expanded: no probe needed, and nothing read if it is refused.
		n := 1
		if b.off == 0 {
			n = minRead
		}
		if !b.grow(n) {
			return 0, b.refuse()
		}
		return 0, nil
	}
	if sc, ok := r.(io.ByteScanner); ok {
		c, err := sc.ReadByte()
		if err != nil {
			return 0, err
		}
		if !b.grow(1) {
			err := b.refuse()
			if uerr := sc.UnreadByte(); uerr != nil {
				return 0, uerr // r broke io.ByteScanner's contract
			}
			return 0, err
		}
		b.buf = append(b.buf, c)
		return 1, nil
	}
	if b.fp.strict {
		return 0, b.refuse()
	}
	if b.fp.budget != nil {
		// The byte could not be given back if the budget refused the
		// expansion: expand first.
		if !b.grow(1) {
			return 0, b.refuse()
		}
		return 0, nil
	}
	m, err := r.Read(b.probe[:])
	if m < 0 {
		panic(errNegativeRead)
	}
	if m > 1 {
		panic(errBadRead)
	}
	if m == 1 {
		b.grow(1) // an Expand buffer without a budget always grows
		b.buf = append(b.buf, b.probe[0])
	}
	return m, err
}

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

// refuse counts a write a Strict buffer refused and returns its error.
func (b *Buffer) refuse() error {
	b.fp.countRefusal()
	return io.ErrShortWrite
}

// grow makes room for n more bytes after len(b.buf), n > 0. It reports
// false, changing nothing, when a Strict FixedPool buffer would pass its
// size, or an Expand one its pool's budget. It panics with
// bytes.ErrTooLarge, changing nothing, when the storage cannot be had.
func (b *Buffer) grow(n int) bool {
	l := len(b.buf) - b.off
	c := cap(b.buf)
	if n > maxInt-l {
		if b.fp != nil && b.fp.strict {
			return false // it never reserves
		}
		panic(bytes.ErrTooLarge)
	}
	need := l + n
	fixed := b.fp != nil && !b.owned
	// Slide the unread bytes to the front when that makes room: always
	// before a FixedPool buffer expands, else when they take at most half
	// the storage, as bytes.Buffer does, so that sliding stays amortized.
	if b.off > 0 && (need <= c/2 || fixed && need <= c) {
		copy(b.buf, b.buf[b.off:])
		b.buf = b.buf[:l]
		b.off = 0
		b.lastRead = opInvalid // the bytes read are gone
		return true
	}
	if b.fp != nil && b.fp.strict {
		return false
	}
	p := b.pool
	if p == nil {
		p = Default()
	}
	size := need
	if c == 0 {
		size = max(need, p.defaultSize())
	} else if c <= maxInt/2 {
		size = max(need, 2*c)
	}
	// Ask the system before taking storage: make would end the process
	// over a size it cannot serve. Doubling that the system refuses falls
	// back to the size needed.
	if !sysmem.Available(uint64(size)) {
		if size == need || !sysmem.Available(uint64(need)) {
			panic(bytes.ErrTooLarge)
		}
		size = need
	}
	if checked.Enabled {
		// Ask for the whole class: a Buffer writes up to the capacity, and
		// bytepool's checked build guards the slack past the length asked.
		size = p.bp.ClassSize(size)
	}
	if b.fp != nil && b.fp.budget != nil && !b.fp.chargeGrowth(b, p.bp.ClassSize(size)) {
		return false
	}
	nb := p.bp.Get(size)[:l]
	copy(nb, b.buf[b.off:])
	if b.owned {
		p.bp.Put(b.buf)
	} else if b.fp != nil {
		b.fp.countExpansion()
	}
	b.buf, b.off, b.owned = nb, 0, true
	b.lastRead = opInvalid
	return true
}
