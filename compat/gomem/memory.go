package gomem

import (
	"io"

	"github.com/memkit/memkit/buffer"
)

// Memory is gomem's multi-buffer value: Buffers, read as one stream of Size
// bytes, referenced and never copied when pushed (a [buffer.Slice] in
// memkit's terms; Slice converts).
//
// A Memory is not safe for concurrent use. The zero value is an empty
// Memory. It is a plain value: copies share the buffers. Size must equal
// the sum of the buffers' lengths; the methods keep it so.
type Memory struct {
	Size    int
	Buffers [][]byte
}

// NewMemory returns a Memory of the one buffer buf.
func NewMemory(buf []byte) Memory { return Memory{Size: len(buf), Buffers: [][]byte{buf}} }

// Slice returns a buffer.Slice of m's buffers (sharing the list).
func (m *Memory) Slice() buffer.Slice { return buffer.NewSlice(m.Buffers...) }

// WriteTo writes the buffers to w (writev on a net.Conn) and returns the
// bytes written. m is not consumed.
func (m *Memory) WriteTo(w io.Writer) (int64, error) {
	s := m.Slice()
	return s.WriteTo(w)
}

// Reset empties m, keeping its list for reuse.
func (m *Memory) Reset() {
	clear(m.Buffers)
	m.Buffers = m.Buffers[:0]
	m.Size = 0
}

// UpdateBuffer replaces buffer index (counted from the end if negative)
// with buf.
func (m *Memory) UpdateBuffer(index int, buf []byte) {
	if index < 0 {
		index += len(m.Buffers)
	}
	m.Size += len(buf) - len(m.Buffers[index])
	m.Buffers[index] = buf
}

// CopyFrom appends a copy of b's bytes, in one new heap buffer.
func (m *Memory) CopyFrom(b *Memory) {
	buf := make([]byte, b.Size)
	b.CopyTo(buf)
	m.PushOne(buf)
}

// Equal reports whether m and b hold the same bytes, however they are cut
// into buffers.
func (m *Memory) Equal(b *Memory) bool {
	x, y := m.Slice(), b.Slice()
	return x.Equal(&y)
}

// CopyTo copies m's bytes into buf, up to len(buf).
func (m *Memory) CopyTo(buf []byte) {
	s := m.Slice()
	s.CopyTo(buf)
}

// ToBytes returns m's bytes in one new slice.
func (m *Memory) ToBytes() []byte {
	buf := make([]byte, m.Size)
	m.CopyTo(buf)
	return buf
}

// PushOne appends the buffer b (referenced, not copied).
func (m *Memory) PushOne(b []byte) {
	m.Buffers = append(m.Buffers, b)
	m.Size += len(b)
}

// Push appends the buffers b.
func (m *Memory) Push(b ...[]byte) {
	m.Buffers = append(m.Buffers, b...)
	for _, x := range b {
		m.Size += len(x)
	}
}

// Append appends mm's buffers and returns m.
func (m *Memory) Append(mm Memory) *Memory {
	m.Buffers = append(m.Buffers, mm.Buffers...)
	m.Size += mm.Size
	return m
}

// Count returns the number of buffers.
func (m *Memory) Count() int { return len(m.Buffers) }

// Range calls yield with each buffer in order.
func (m *Memory) Range(yield func([]byte)) {
	for _, b := range m.Buffers {
		yield(b)
	}
}

// NewReader returns a reader at the start of m. The reader refers to m, which
// must outlive it.
func (m *Memory) NewReader() MemoryReader { return MemoryReader{Memory: m, Length: m.Size} }
