package gomem_test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/memkit/memkit/compat/gomem"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/sysmem"
)

// FuzzMemoryReader decodes the input into a Memory cut into buffers of
// assorted lengths (empty ones too) and a sequence of reader calls, and
// checks each against a model (the bytes in one slice and an offset):
// what it returns, the error, Length and GetCurrent. Lengths come from
// the input as a peer's length field would, hostile ones included (past
// the end, negative, up to the largest int): no call may panic but as
// documented, allocate more than the stream holds, or lose its place. A
// copy of the reader must read on from the copy's position. It also feeds
// the allocator's Read(r, n) a hostile n: an error, never the runtime's
// fatal out-of-memory, and never more memory than the bytes that came.
func FuzzMemoryReader(f *testing.F) {
	f.Add([]byte{3, 5, 0, 7, 1, 0, 2, 0, 3, 4, 4, 0, 5, 2, 6, 1, 7, 0, 8, 9, 9, 3})
	f.Add([]byte{8, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 10, 255, 255, 11, 255, 7, 12})
	f.Add([]byte{2, 200, 0, 13, 250, 255, 14, 6, 3, 15, 1, 16, 0, 17, 40, 1, 18})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		var flat []byte
		var m gomem.Memory
		for k := int(ops.Byte()) % 9; k > 0; k-- {
			n := int(ops.Byte()) % 40
			if n > 30 {
				n = 0 // an empty buffer
			}
			b := make([]byte, n)
			memtest.Fill(b, uint64(len(flat)+1))
			flat = append(flat, b...)
			m.PushOne(b)
		}
		r := m.NewReader()
		off := 0
		check := func(op string) {
			t.Helper()
			if r.Length != len(flat)-off || r.Offset() != off {
				t.Fatalf("after %s: Length %d Offset %d; model %d %d", op, r.Length, r.Offset(), len(flat)-off, off)
			}
			cur := r.GetCurrent()
			if (len(cur) == 0) != (off == len(flat)) || !bytes.Equal(cur, flat[off:off+len(cur)]) {
				t.Fatalf("after %s: GetCurrent %v at %d", op, cur, off)
			}
		}
		for ops.More() {
			switch op := ops.Byte(); op % 19 {
			case 0, 1, 2: // ReadByte
				c, err := r.ReadByte()
				if off == len(flat) {
					if err != io.EOF {
						t.Fatalf("ReadByte at the end: %v", err)
					}
				} else if err != nil || c != flat[off] {
					t.Fatalf("ReadByte = %d, %v; model %d", c, err, flat[off])
				} else {
					off++
				}
			case 3, 4: // LEB128Unmarshal
				v, n, err := r.LEB128Unmarshal()
				wv, wn, werr := leb128Model(flat[off:])
				if v != wv || n != wn || err != werr {
					t.Fatalf("LEB128 = %d, %d, %v; model %d, %d, %v", v, n, err, wv, wn, werr)
				}
				off += n
			case 5: // Skip of a length from the stream
				n := hostile(ops)
				err := r.Skip(n)
				switch {
				case n <= 0:
					if err != nil {
						t.Fatalf("Skip(%d) = %v", n, err)
					}
				case n > len(flat)-off:
					if err == nil {
						t.Fatalf("Skip(%d) past the end of %d: nil", n, len(flat)-off)
					}
				default:
					if err != nil {
						t.Fatalf("Skip(%d) = %v", n, err)
					}
					off += n
				}
			case 6: // Unread
				n := int(ops.Byte()) % 50
				if n > off {
					memtest.CheckPanic(t, "memkit/gomem: Unread past the start", func() { r.Unread(n) })
				} else {
					r.Unread(n)
					off -= n
				}
			case 7, 8: // ReadBytes of a length from the stream
				n := hostile(ops)
				if n < 0 {
					memtest.CheckPanic(t, "memkit/buffer: negative read count", func() { r.ReadBytes(n) })
					break
				}
				b, err := r.ReadBytes(n)
				if n > len(flat)-off {
					if err == nil || b != nil {
						t.Fatalf("ReadBytes(%d) past the end of %d: %d bytes, %v", n, len(flat)-off, len(b), err)
					}
					break
				}
				if err != nil || !bytes.Equal(b, flat[off:off+n]) {
					t.Fatalf("ReadBytes(%d) = %v, %v", n, b, err)
				}
				off += n
			case 9: // ReadBE
				n := int(ops.Byte()%7) - 1
				v, err := r.ReadBE(n)
				switch {
				case n > 4:
					if err == nil {
						t.Fatal("ReadBE(5) = nil")
					}
				case n <= 0:
					if v != 0 || err != nil {
						t.Fatalf("ReadBE(%d) = %d, %v", n, v, err)
					}
				case n > len(flat)-off:
					if err == nil {
						t.Fatalf("ReadBE(%d) past the end: nil", n)
					}
				default:
					var w uint32
					for _, c := range flat[off : off+n] {
						w = w<<8 | uint32(c)
					}
					if v != w || err != nil {
						t.Fatalf("ReadBE(%d) = %d, %v; model %d", n, v, err, w)
					}
					off += n
				}
			case 10: // Read
				p := make([]byte, int(ops.Byte())%70)
				n, err := r.Read(p)
				if off == len(flat) {
					if n != 0 || err != io.EOF {
						t.Fatalf("Read at the end = %d, %v", n, err)
					}
					break
				}
				if n == 0 && len(p) > 0 || !bytes.Equal(p[:n], flat[off:off+n]) {
					t.Fatalf("Read = %d, %v", n, err)
				}
				off += n
			case 11: // RangeN of a length from the stream
				n := hostile(ops)
				var got []byte
				r.RangeN(n, func(b []byte) { got = append(got, b...) })
				k := max(min(n, len(flat)-off), 0)
				if !bytes.Equal(got, flat[off:off+k]) {
					t.Fatalf("RangeN(%d) = %v; model %v", n, got, flat[off:off+k])
				}
				off += k
			case 12: // a copy reads on from its position, apart
				c := r
				if b, err := c.ReadByte(); off < len(flat) && (err != nil || b != flat[off]) {
					t.Fatalf("copy's ReadByte = %d, %v", b, err)
				}
			case 13: // the allocator's Read of a length from the stream
				n := hostile(ops)
				if n < 0 {
					break
				}
				sent := flat[off:]
				a := gomem.NewScalableMemoryAllocator(1024)
				mem, err := a.Read(bytes.NewReader(sent), n)
				switch {
				case !sysmem.Available(uint64(n)):
					if mem != nil || !errors.Is(err, extent.ErrBudget) {
						t.Fatalf("Read(%d) the machine cannot serve = %d bytes, %v", n, len(mem), err)
					}
				case n > len(sent):
					if mem != nil || err == nil {
						t.Fatalf("Read(%d) of %d bytes = %d bytes, %v", n, len(sent), len(mem), err)
					}
				default:
					if err != nil || !bytes.Equal(mem, sent[:n]) {
						t.Fatalf("Read(%d) = %v, %v", n, mem, err)
					}
				}
			default:
				// The remaining op codes read a byte, as parsers mostly do.
				if _, err := r.ReadByte(); err == nil {
					off++
				}
			}
			check("op")
		}
	})
}

// hostile decodes a length as a peer might send it: mostly small, or past
// the end, negative, or up to the largest int.
func hostile(ops *memtest.Ops) int {
	switch k := ops.Byte(); k % 8 {
	case 0:
		return -1 - int(ops.Byte())
	case 1:
		return math.MaxInt - int(ops.Byte())
	case 2:
		return 1<<(20+int(ops.Byte())%20) + int(ops.Byte())
	default:
		return int(ops.Byte()) % 80
	}
}

// leb128Model is gomem's LEB128Unmarshal on a flat slice: at most 8
// bytes; io.EOF with nothing left, io.ErrUnexpectedEOF when the number is
// cut off.
func leb128Model(b []byte) (uint, int, error) {
	if len(b) == 0 {
		return 0, 0, io.EOF
	}
	var v uint
	for i := 0; i < 8; i++ {
		if i == len(b) {
			return 0, 0, io.ErrUnexpectedEOF
		}
		v |= uint(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1, nil
		}
	}
	return v, 8, nil
}
