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
// addressable variable. A copy starts a new reader at the copy's position,
// at the cost of a skip over the buffers before it. Calls never allocate but
// for ReadBytes of bytes that span buffers; the first call binds the reader
// to its variable, which then lives on the heap: one allocation per reader
// (two from NewReadableBuffersFromBytes, which makes its Memory too), where
// gomem's allocated on most calls.
type MemoryReader struct {
	*Memory
	Length int // bytes left to read

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

// r returns the buffer.Reader, positioned Size-Length bytes in.
func (r *MemoryReader) r() *buffer.Reader {
	if r.bound != &r.s {
		r.s = r.Memory.Slice()
		r.rd = r.s.NewReader()
		r.rd.Skip(r.Size - r.Length)
		r.bound = &r.s
	}
	return &r.rd
}

// sync updates Length after a call and passes its error through.
func (r *MemoryReader) sync(err error) error {
	r.Length = r.rd.Remaining()
	return err
}

// Offset returns the bytes read so far.
func (r *MemoryReader) Offset() int { return r.Size - r.Length }

// GetCurrent returns the unread part of the current buffer (a view).
func (r *MemoryReader) GetCurrent() []byte {
	off := r.Offset()
	for _, b := range r.Buffers {
		if off < len(b) {
			return b[off:]
		}
		off -= len(b)
	}
	return nil
}

// MoveToEnd skips every byte left.
func (r *MemoryReader) MoveToEnd() { r.Skip(r.Length) }

// Read copies the next bytes into buf; io.EOF when none are left.
func (r *MemoryReader) Read(buf []byte) (int, error) {
	n, err := r.r().Read(buf)
	return n, r.sync(err)
}

// ReadByte reads one byte.
func (r *MemoryReader) ReadByte() (byte, error) {
	b, err := r.r().ReadByte()
	return b, r.sync(err)
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
// codes sizes) and returns it and the bytes it took.
func (r *MemoryReader) LEB128Unmarshal() (uint, int, error) {
	v, n, err := r.r().LEB128()
	return uint(v), n, r.sync(err)
}

// Skip advances n bytes; if fewer remain it does not move and returns
// io.EOF or io.ErrUnexpectedEOF.
func (r *MemoryReader) Skip(n int) error { return r.sync(r.r().Skip(n)) }

// Unread steps back n bytes. Stepping back past the start panics with
// "memkit/gomem: Unread past the start", as gomem's failed too.
func (r *MemoryReader) Unread(n int) {
	if err := r.r().Unread(n); err != nil {
		panic("memkit/gomem: Unread past the start")
	}
	r.sync(nil)
}

// ReadBytes reads the next n bytes: a view when they lie in one buffer, a
// new slice when they span buffers.
func (r *MemoryReader) ReadBytes(n int) ([]byte, error) {
	b, err := r.r().ReadBytes(n)
	return b, r.sync(err)
}

// ReadBE reads an n-byte big-endian unsigned integer, 1 <= n <= 4.
func (r *MemoryReader) ReadBE(n int) (uint32, error) {
	if n > 4 {
		return 0, errBE
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
	r.r().Range(func(b []byte) bool { yield(b); return true })
	r.sync(nil)
}

// RangeN is Range over the next n bytes (all that remain if fewer).
func (r *MemoryReader) RangeN(n int, yield func([]byte)) {
	r.r().RangeN(min(n, r.Length), func(b []byte) bool { yield(b); return true })
	r.sync(nil)
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
	r.sync(nil)
}

var _ io.ByteReader = (*MemoryReader)(nil)
