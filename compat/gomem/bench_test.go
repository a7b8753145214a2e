package gomem_test

import (
	"encoding/binary"
	"testing"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/compat/gomem"
)

var sink int

// readerData is 64 KiB in 1 KiB buffers: bytes of a multiplicative
// sequence, or LEB128 numbers of one, two and three bytes in turn.
func readerData(leb bool) [][]byte {
	const total, seg = 64 << 10, 1 << 10
	flat := make([]byte, 0, total)
	for x := uint64(1); len(flat) < total-3; x = x*6364136223846793005 + 1442695040888963407 {
		if leb {
			flat = binary.AppendUvarint(flat, x>>(64-7*(1+len(flat)%3)))
		} else {
			flat = append(flat, byte(x>>56))
		}
	}
	flat = append(flat, make([]byte, total-len(flat))...)
	var bufs [][]byte
	for i := 0; i < total; i += seg {
		bufs = append(bufs, flat[i:i+seg:i+seg])
	}
	return bufs
}

// BenchmarkMemoryReader compares MemoryReader with the buffer.Reader it
// wraps, one call per op, the same loop for both (issue 24: the drop-in's
// layer should cost nothing).
func BenchmarkMemoryReader(b *testing.B) {
	d, ld := readerData(false), readerData(true)
	b.Run("ReadByte/seg=1KiB/impl=gomem", func(b *testing.B) {
		m := gomem.Memory{}
		m.Push(d...)
		r := m.NewReader()
		b.ReportAllocs()
		for b.Loop() {
			c, err := r.ReadByte()
			if err != nil {
				r = m.NewReader()
			}
			sink += int(c)
		}
	})
	b.Run("ReadByte/seg=1KiB/impl=buffer", func(b *testing.B) {
		s := buffer.NewSlice(d...)
		r := s.NewReader()
		b.ReportAllocs()
		for b.Loop() {
			c, err := r.ReadByte()
			if err != nil {
				r = s.NewReader()
			}
			sink += int(c)
		}
	})
	b.Run("LEB128/seg=1KiB/impl=gomem", func(b *testing.B) {
		m := gomem.Memory{}
		m.Push(ld...)
		r := m.NewReader()
		b.ReportAllocs()
		for b.Loop() {
			v, _, err := r.LEB128Unmarshal()
			if err != nil || r.Length < 3 {
				r = m.NewReader()
			}
			sink += int(v)
		}
	})
	b.Run("LEB128/seg=1KiB/impl=buffer", func(b *testing.B) {
		s := buffer.NewSlice(ld...)
		r := s.NewReader()
		b.ReportAllocs()
		for b.Loop() {
			v, _, err := r.LEB128()
			if err != nil || r.Remaining() < 3 {
				r = s.NewReader()
			}
			sink += int(v)
		}
	})
}
