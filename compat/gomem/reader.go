package gomem

import (
	"errors"
	"io"

	"github.com/memkit/memkit/buffer"
)

// MemoryReader is gomem's reader of a Memory, front to back, on a
// [buffer.Reader]: io.Reader, io.ByteReader and a binary parser's calls.
// Length is the number of bytes left to read, kept current by every method.
//
// A MemoryReader is not safe for concurrent use. Create it with
// Memory.NewReader or NewReadableBuffersFromBytes and call its methods on an
// addressable variable. A copy reads on from the copy's position,
// independently. ReadByte, LEB128Unmarshal, ReadBE, Read and Skip within a
// buffer, and Range and RangeN, work on the reader's own cursor in the
// buffers (ReadByte is a bounds check, a load and two adds, and inlines:
// what buffer.Reader's costs); the other calls, and those across buffers,
// are buffer.Reader's after a catch-up of its position. Calls never
// allocate but for ReadBytes of bytes that span buffers; the first call
// that needs the buffer.Reader binds the reader to its variable, which then
// lives on the heap: one allocation per reader (two from
// NewReadableBuffersFromBytes, which makes its Memory too), where gomem's
// allocated on most calls.
type MemoryReader struct {
	*Memory
	Length int // bytes left to read

	// The cursor of the in-place reads: buf is the buffer being
	// read, whole, Buffers[next-1] (nil before the first, next == 0), which
	// starts start bytes into the Memory; pos is the bytes of it read. Every
	// call keeps start+pos == Size-Length (sync moves the cursor after a call
	// of the buffer.Reader).
	buf         []byte
	pos         int
	next, start int

	s     buffer.Slice
	rd    buffer.Reader
	bound *buffer.Slice // &s when rd reads s; otherwise rd must be rebuilt
}

// NewReadableBuffersFromBytes returns a reader of the buffers b, in a Memory
// it allocates.
func NewReadableBuffersFromBytes(b ...[]byte) MemoryReader {
	m := &Memory{Buffers: b}
	for _, x := range b {
		m.Size += len(x)
	}
	return m.NewReader()
}

// r returns the buffer.Reader, positioned Size-Length bytes in (the
// cursor moves without it): the caller moves the position with it, then
// calls sync.
func (r *MemoryReader) r() *buffer.Reader {
	if r.bound != &r.s {
		r.s = r.Memory.Slice()
		r.rd = r.s.NewReader()
		r.bound = &r.s
	}
	if d := r.Offset() - r.rd.Offset(); d > 0 {
		r.rd.Skip(d)
	} else if d < 0 {
		r.rd.Unread(-d)
	}
	return &r.rd
}

// sync updates Length and the cursor after a call of the buffer.Reader and
// passes its error through.
func (r *MemoryReader) sync(err error) error {
	r.Length = r.rd.Remaining()
	r.seek()
	return err
}

// seek moves the cursor to the position, Size-Length, walking the buffers
// from where it is.
func (r *MemoryReader) seek() {
	off := r.Offset()
	for r.next > 1 && off < r.start {
		r.next--
		r.buf = r.Buffers[r.next-1]
		r.start -= len(r.buf)
	}
	for off >= r.start+len(r.buf) && r.next < len(r.Buffers) {
		r.start += len(r.buf)
		r.buf = r.Buffers[r.next]
		r.next++
	}
	r.pos = off - r.start
}

// Offset returns the bytes read so far.
func (r *MemoryReader) Offset() int { return r.Size - r.Length }

// GetCurrent returns the unread part of the current buffer (a view).
func (r *MemoryReader) GetCurrent() []byte {
	for r.pos >= len(r.buf) {
		if r.next >= len(r.Buffers) {
			return nil
		}
		r.advance()
	}
	return r.buf[r.pos:]
}

// advance moves the cursor to the start of the next buffer.
func (r *MemoryReader) advance() {
	r.start += len(r.buf)
	r.buf = r.Buffers[r.next]
	r.next++
	r.pos = 0
}

// MoveToEnd skips every byte left.
func (r *MemoryReader) MoveToEnd() { r.Skip(r.Length) }

// Read copies the next bytes into buf; io.EOF when none are left.
func (r *MemoryReader) Read(buf []byte) (int, error) {
	if cur := r.GetCurrent(); len(buf) <= len(cur) && len(buf) > 0 { // within the buffer
		n := copy(buf, cur)
		r.pos += n
		r.Length -= n
		return n, nil
	}
	n, err := r.r().Read(buf)
	return n, r.sync(err)
}

// ReadByte reads one byte.
func (r *MemoryReader) ReadByte() (byte, error) {
	// The move to the next buffer is written out rather than called (as
	// advance), so that ReadByte stays within the inlining budget.
	for r.pos >= len(r.buf) {
		if r.next >= len(r.Buffers) {
			return 0, io.EOF
		}
		r.start += len(r.buf)
		r.buf = r.Buffers[r.next]
		r.next++
		r.pos = 0
	}
	c := r.buf[r.pos]
	r.pos++
	r.Length--
	return c, nil
}

// ReadByteTo reads a byte into each of b in turn.
func (r *MemoryReader) ReadByteTo(b ...*byte) error {
	for _, p := range b {
		c, err := r.ReadByte()
		if err != nil {
			return err
		}
		*p = c
	}
	return nil
}

// ReadByteMask reads a byte and returns it ANDed with mask.
func (r *MemoryReader) ReadByteMask(mask byte) (byte, error) {
	b, err := r.ReadByte()
	return b & mask, err
}

// LEB128Unmarshal reads an unsigned LEB128 number (at most 8 bytes, as AV1
// codes sizes) and returns it and the bytes it took. Past the end it returns
// io.EOF (no byte left) or io.ErrUnexpectedEOF and does not move.
func (r *MemoryReader) LEB128Unmarshal() (uint, int, error) {
	if len(r.buf)-r.pos >= 8 {
		var v uint
		for i, c := range r.buf[r.pos : r.pos+8] {
			v |= uint(c&0x7f) << (7 * i)
			if c < 0x80 {
				r.pos += i + 1
				r.Length -= i + 1
				return v, i + 1, nil
			}
		}
		r.pos += 8
		r.Length -= 8
		return v, 8, nil
	}
	return r.leb128Slow()
}

// leb128Slow is LEB128Unmarshal near the end of a buffer: buffer.Reader's
// LEB128, whose rule is the same.
func (r *MemoryReader) leb128Slow() (uint, int, error) {
	v, n, err := r.r().LEB128()
	return uint(v), n, r.sync(err)
}

// Skip advances n bytes; if fewer remain it does not move and returns
// io.EOF or io.ErrUnexpectedEOF. n <= 0 does nothing, as in gomem.
func (r *MemoryReader) Skip(n int) error {
	if n <= 0 {
		return nil
	}
	if n <= len(r.GetCurrent()) { // within the buffer
		r.pos += n
		r.Length -= n
		return nil
	}
	return r.sync(r.r().Skip(n))
}

// Unread steps back n bytes. Stepping back past the start panics with
// "memkit/gomem: Unread past the start", as gomem's failed too, and a
// negative n with "memkit/buffer: negative read count".
func (r *MemoryReader) Unread(n int) {
	if err := r.r().Unread(n); err != nil {
		panic("memkit/gomem: Unread past the start")
	}
	r.sync(nil)
}

// ReadBytes reads the next n bytes: a view when they lie in one buffer, a
// new slice when they span buffers. An n past the bytes left returns io.EOF
// or io.ErrUnexpectedEOF having allocated nothing (a length read from the
// stream cannot make it allocate more than the stream holds); a negative n
// panics with "memkit/buffer: negative read count" (gomem's make panicked).
func (r *MemoryReader) ReadBytes(n int) ([]byte, error) {
	b, err := r.r().ReadBytes(n)
	return b, r.sync(err)
}

// ReadBE reads an n-byte big-endian unsigned integer, n <= 4 (n <= 0
// reads nothing and returns 0, as in gomem).
func (r *MemoryReader) ReadBE(n int) (uint32, error) {
	if n > 4 {
		return 0, errBE
	}
	if n <= 0 {
		return 0, nil
	}
	if cur := r.GetCurrent(); n <= len(cur) { // within the buffer
		var v uint32
		for _, c := range cur[:n] {
			v = v<<8 | uint32(c)
		}
		r.pos += n
		r.Length -= n
		return v, nil
	}
	v, err := r.r().UintBE(n)
	return uint32(v), r.sync(err)
}

var errBE = errors.New("memkit/gomem: ReadBE reads at most 4 bytes")

// Range calls yield with the unread bytes, a buffer at a time, consuming
// them; a nil yield only moves to the end.
func (r *MemoryReader) Range(yield func([]byte)) {
	if yield == nil {
		r.MoveToEnd()
		return
	}
	r.RangeN(r.Length, yield)
}

// RangeN is Range over the next n bytes (all that remain if fewer; none
// if n <= 0).
func (r *MemoryReader) RangeN(n int, yield func([]byte)) {
	if n <= 0 {
		return
	}
	if yield == nil { // gomem's skips
		r.Skip(min(n, r.Length))
		return
	}
	for n > 0 {
		cur := r.GetCurrent()
		if len(cur) == 0 {
			return
		}
		k := min(n, len(cur))
		r.pos += k
		r.Length -= k
		n -= k
		yield(cur[:k:k])
	}
}

// ClipFront drops what has been read from the Memory: buffers read to the
// end leave it (yield is called with each, for its owner to recycle; its
// result is ignored) and the buffer being read loses its read part.
func (r *MemoryReader) ClipFront(yield func([]byte) bool) {
	rd := r.r()
	before := r.s.Count()
	var f func([]byte)
	if yield != nil {
		f = func(b []byte) { yield(b) }
	}
	rd.ClipFront(f)
	r.Buffers = r.Buffers[before-r.s.Count():] // the Slice shares the list
	r.Size = r.s.Len()
	r.buf, r.pos, r.next, r.start = nil, 0, 0, 0
	r.sync(nil)
}

var _ io.ByteReader = (*MemoryReader)(nil)
