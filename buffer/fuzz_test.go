package buffer_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// FuzzBuffer decodes the input into writes, reads, truncations, resets,
// grows, ReadFrom, WriteTo, appends, and bytes.Buffer's byte and rune
// readers, unreads, Next, Peek and AvailableBuffer on one Buffer — from a
// Pool, the zero value, or a FixedPool checkout under either overflow
// policy — and checks every result and the contents after every step
// against bytes.Buffer, with the Strict policy's refusals modelled on top:
// a write that would take the unread bytes past the pool's size is refused
// whole. A hostile Grow, of more than an int holds or the system can
// serve, must panic with bytes.ErrTooLarge and change nothing.
func FuzzBuffer(f *testing.F) {
	f.Add([]byte{0, 0, 10, 1, 5, 3, 2, 4, 7, 9, 6, 1, 8, 200})
	f.Add([]byte{2, 0, 40, 0, 40, 3, 30, 0, 40, 6, 100, 8, 7, 11, 5})
	f.Add([]byte{3, 0, 20, 0, 20, 3, 5, 0, 30, 6, 50, 9, 77, 10, 2, 12, 3})
	f.Add([]byte{1, 1, 3, 2, 9, 5, 0, 255, 4, 1, 11, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		const size = 64
		var (
			b      *buffer.Buffer
			zero   buffer.Buffer
			strict bool
		)
		switch ops.Byte() % 4 {
		case 0:
			b = buffer.Get()
		case 1:
			b = &zero
		case 2:
			b = mustFixed(t, 1, size).Checkout()
		case 3:
			b = mustFixed(t, 1, size, buffer.WithOverflow(buffer.Strict)).Checkout()
			strict = true
		}
		defer b.Free()
		var m bytes.Buffer
		fits := func(n int) bool { return !strict || m.Len()+n <= size }
		payload := func() []byte {
			n := int(ops.Byte())
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(m.Len() + i)
			}
			return p
		}
		// After a Grow, whether an UnreadByte or UnreadRune may undo the
		// last read depends on whether the Grow moved the contents, which
		// depends on the capacity, a Buffer's and bytes.Buffer's alike (and
		// the model is not grown): not compared until a read consumes a
		// byte. A read of nothing would let an unread bring back, in the
		// model, a byte read before the Grow.
		grown := false
		for step := 0; ops.More(); step++ {
			op := ops.Byte() % 23
			unread := m.Len()
			switch op {
			case 6, 22:
				grown = true
			}
			switch op {
			case 0: // Write
				p := payload()
				n, err := b.Write(p)
				if fits(len(p)) {
					m.Write(p)
					if n != len(p) || err != nil {
						t.Fatalf("step %d Write(%d) = %d, %v", step, len(p), n, err)
					}
				} else if n != 0 || err != io.ErrShortWrite {
					t.Fatalf("step %d refused Write = %d, %v", step, n, err)
				}
			case 1: // WriteString
				p := payload()
				n, err := b.WriteString(string(p))
				if fits(len(p)) {
					m.Write(p)
					if n != len(p) || err != nil {
						t.Fatalf("step %d WriteString = %d, %v", step, n, err)
					}
				} else if n != 0 || err != io.ErrShortWrite {
					t.Fatalf("step %d refused WriteString = %d, %v", step, n, err)
				}
			case 2: // WriteByte
				c := ops.Byte()
				err := b.WriteByte(c)
				if fits(1) {
					m.WriteByte(c)
					if err != nil {
						t.Fatalf("step %d WriteByte: %v", step, err)
					}
				} else if err != io.ErrShortWrite {
					t.Fatalf("step %d refused WriteByte: %v", step, err)
				}
			case 3: // Read
				p1, p2 := make([]byte, ops.Byte()%80), make([]byte, 0, 80)
				p2 = p2[:len(p1)]
				n1, e1 := b.Read(p1)
				n2, e2 := m.Read(p2)
				if n1 != n2 || e1 != e2 || !bytes.Equal(p1[:n1], p2[:n2]) {
					t.Fatalf("step %d Read = %d %v; model %d %v", step, n1, e1, n2, e2)
				}
			case 4: // Truncate
				if m.Len() > 0 {
					k := int(ops.Byte()) % (m.Len() + 1)
					b.Truncate(k)
					m.Truncate(k)
				}
			case 5:
				b.Reset()
				m.Reset()
			case 6: // Grow
				n := int(ops.Byte())
				b.Grow(n)
				if fits(n) && b.Available() < n {
					t.Fatalf("step %d Grow(%d): room %d", step, n, b.Available())
				}
			case 7: // ReadFrom, in one-byte reads or whole
				p := payload()
				var r io.Reader = bytes.NewReader(p)
				unreads := true // bytes.Reader is an io.ByteScanner
				if ops.Byte()&1 == 1 {
					r, unreads = iotest.OneByteReader(r), false
				}
				n, err := b.ReadFrom(r)
				room := len(p)
				if strict {
					room = min(len(p), size-m.Len())
				}
				m.Write(p[:room])
				// A Strict buffer that the payload fills exactly cannot tell
				// whether a reader that cannot unread is at its end without
				// reading a byte it could not keep: it says ErrShortWrite.
				exact := strict && !unreads && room == len(p) && m.Len() == size
				if room < len(p) || exact && err == io.ErrShortWrite {
					if n != int64(room) || err != io.ErrShortWrite {
						t.Fatalf("step %d strict ReadFrom = %d, %v; want %d, ErrShortWrite", step, n, err, room)
					}
				} else if n != int64(len(p)) || err != nil {
					t.Fatalf("step %d ReadFrom = %d, %v", step, n, err)
				}
			case 8: // WriteTo
				var w1, w2 bytes.Buffer
				n1, e1 := b.WriteTo(&w1)
				n2, e2 := m.WriteTo(&w2)
				if n1 != n2 || e1 != e2 || !bytes.Equal(w1.Bytes(), w2.Bytes()) {
					t.Fatalf("step %d WriteTo = %d %v; model %d %v", step, n1, e1, n2, e2)
				}
			case 9, 10: // AppendInt, AppendUint
				v := int64(ops.Uint16()) << (ops.Byte() % 48)
				if ops.Byte()&1 == 1 {
					v = -v
				}
				base := []int{10, 10, 16, 2}[ops.Byte()%4]
				var want []byte
				var err error
				if op == 9 {
					want = strconv.AppendInt(nil, v, base)
					err = b.AppendInt(v, base)
				} else {
					want = strconv.AppendUint(nil, uint64(v), base)
					err = b.AppendUint(uint64(v), base)
				}
				if fits(len(want)) {
					m.Write(want)
					if err != nil {
						t.Fatalf("step %d Append: %v", step, err)
					}
				} else if err != io.ErrShortWrite {
					t.Fatalf("step %d refused Append: %v", step, err)
				}
			case 11: // AppendQuote
				p := payload()
				want := strconv.AppendQuote(nil, string(p))
				err := b.AppendQuote(string(p))
				if fits(len(want)) {
					m.Write(want)
					if err != nil {
						t.Fatalf("step %d AppendQuote: %v", step, err)
					}
				} else if err != io.ErrShortWrite {
					t.Fatalf("step %d refused AppendQuote: %v", step, err)
				}
			case 12: // AppendFloat
				f := math.Float64frombits(binary.LittleEndian.Uint64([]byte{ops.Byte(), ops.Byte(), ops.Byte(), ops.Byte(), ops.Byte(), ops.Byte(), ops.Byte(), ops.Byte()}))
				want := strconv.AppendFloat(nil, f, 'g', -1, 64)
				err := b.AppendFloat(f, 'g', -1, 64)
				if fits(len(want)) {
					m.Write(want)
					if err != nil {
						t.Fatalf("step %d AppendFloat: %v", step, err)
					}
				} else if err != io.ErrShortWrite {
					t.Fatalf("step %d refused AppendFloat: %v", step, err)
				}
			case 13: // ReadByte
				c1, e1 := b.ReadByte()
				c2, e2 := m.ReadByte()
				if c1 != c2 || e1 != e2 {
					t.Fatalf("step %d ReadByte = %q %v; model %q %v", step, c1, e1, c2, e2)
				}
			case 14: // ReadRune
				r1, n1, e1 := b.ReadRune()
				r2, n2, e2 := m.ReadRune()
				if r1 != r2 || n1 != n2 || e1 != e2 {
					t.Fatalf("step %d ReadRune = %q %d %v; model %q %d %v", step, r1, n1, e1, r2, n2, e2)
				}
			case 15, 16: // UnreadByte, UnreadRune
				if grown {
					break
				}
				var e1, e2 error
				if op == 15 {
					e1, e2 = b.UnreadByte(), m.UnreadByte()
				} else {
					e1, e2 = b.UnreadRune(), m.UnreadRune()
				}
				if (e1 == nil) != (e2 == nil) {
					t.Fatalf("step %d Unread (op %d) = %v; model %v", step, op, e1, e2)
				}
			case 17: // ReadBytes, ReadString
				delim := ops.Byte()
				if ops.Byte()&1 == 0 {
					l1, e1 := b.ReadBytes(delim)
					l2, e2 := m.ReadBytes(delim)
					if !bytes.Equal(l1, l2) || e1 != e2 {
						t.Fatalf("step %d ReadBytes(%d) = %q %v; model %q %v", step, delim, l1, e1, l2, e2)
					}
				} else {
					l1, e1 := b.ReadString(delim)
					l2, e2 := m.ReadString(delim)
					if l1 != l2 || e1 != e2 {
						t.Fatalf("step %d ReadString(%d) = %q %v; model %q %v", step, delim, l1, e1, l2, e2)
					}
				}
			case 18: // Next
				k := int(ops.Byte() % 80)
				if n1, n2 := b.Next(k), m.Next(k); !bytes.Equal(n1, n2) {
					t.Fatalf("step %d Next(%d) = %q; model %q", step, k, n1, n2)
				}
			case 19: // Peek
				k := int(ops.Byte() % 80)
				p1, e1 := b.Peek(k)
				// bytes.Buffer.Peek (Go 1.26), which the module's go 1.24
				// cannot call: the first k bytes, io.EOF if fewer.
				p2, e2 := m.Bytes(), error(nil)
				if len(p2) < k {
					e2 = io.EOF
				} else {
					p2 = p2[:k]
				}
				if !bytes.Equal(p1, p2) || e1 != e2 {
					t.Fatalf("step %d Peek(%d) = %q %v; model %q %v", step, k, p1, e1, p2, e2)
				}
			case 20: // WriteRune, invalid code points included
				r := rune(ops.Uint16()) << (ops.Byte() % 12)
				if ops.Byte()&1 == 1 {
					r = -r
				}
				want := utf8.AppendRune(nil, r)
				n, err := b.WriteRune(r)
				if fits(len(want)) {
					m.WriteRune(r)
					if n != len(want) || err != nil {
						t.Fatalf("step %d WriteRune(%d) = %d, %v", step, r, n, err)
					}
				} else if n != 0 || err != io.ErrShortWrite {
					t.Fatalf("step %d refused WriteRune = %d, %v", step, n, err)
				}
			case 21: // append to AvailableBuffer, then Write
				p := payload()
				avail := b.AvailableBuffer()
				if len(avail) != 0 || cap(avail) != b.Available() {
					t.Fatalf("step %d AvailableBuffer: len %d cap %d, Available %d", step, len(avail), cap(avail), b.Available())
				}
				n, err := b.Write(append(avail, p...))
				if fits(len(p)) {
					m.Write(p)
					if n != len(p) || err != nil {
						t.Fatalf("step %d Write(AvailableBuffer) = %d, %v", step, n, err)
					}
				} else if n != 0 || err != io.ErrShortWrite {
					t.Fatalf("step %d refused Write(AvailableBuffer) = %d, %v", step, n, err)
				}
			case 22: // a hostile Grow: past an int, or past what the system serves
				// A Strict buffer never reserves: it changes nothing.
				n := []int{maxInt, maxInt - b.Len(), hostileSize}[ops.Byte()%3]
				before, cp := b.Cap(), b.String()
				v, panicked := memtest.PanicValue(func() { b.Grow(n) })
				if strict && panicked || !strict && v != bytes.ErrTooLarge {
					t.Fatalf("step %d Grow(%d) panicked %v (%v); want bytes.ErrTooLarge, or nothing if Strict", step, n, v, panicked)
				}
				if b.Cap() != before || b.String() != cp {
					t.Fatalf("step %d: a refused Grow changed the buffer", step)
				}
			}
			switch op {
			case 3, 13, 14, 17, 18:
				if m.Len() < unread {
					grown = false
				}
			case 0, 1, 2, 7, 9, 10, 11, 12, 20, 21:
				// A write a Strict buffer refused, which the model did
				// not make: whether an unread may still undo the last
				// read depends on whether the refusal slid the contents
				// down first (bytes.Buffer refuses nothing to compare
				// with): not compared until a read consumes a byte.
				if strict && m.Len() == unread {
					grown = true
				}
			}
			if b.Len() != m.Len() || !bytes.Equal(b.Bytes(), m.Bytes()) {
				t.Fatalf("step %d (op %d): contents %q, model %q", step, op, b.Bytes(), m.Bytes())
			}
			if b.Cap() < b.Len() || strict && b.Cap() != size {
				t.Fatalf("step %d: cap %d, len %d", step, b.Cap(), b.Len())
			}
		}
	})
}

// FuzzReader cuts a payload into segments at lengths taken from the input
// (empty ones included), then decodes the rest into Reader calls, and
// checks each result, each error and the position after each call against
// a flat model: a byte slice and an offset, decoded with encoding/binary.
// A call that needs more bytes than remain must return io.EOF or
// io.ErrUnexpectedEOF and not move.
func FuzzReader(f *testing.F) {
	f.Add([]byte{3, 1, 0, 5, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})
	f.Add([]byte{2, 7, 7, 0x80, 0x80, 0x01, 0xff, 0xff, 9, 1, 2, 3, 4, 5, 6, 14, 15, 16, 17})
	f.Add([]byte{4, 1, 1, 1, 1, 16, 2, 9, 4, 11, 3, 6, 8, 5, 12, 19, 18, 20, 21, 22, 23})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		nseg := int(data[0] % 8)
		data = data[1:]
		cuts := data[:min(nseg, len(data))]
		data = data[len(cuts):]
		// The payload: the input itself, so the fuzzer steers the bytes.
		flat := append([]byte(nil), data...)
		var s buffer.Slice
		rest := flat
		for _, c := range cuts {
			n := min(int(c%12), len(rest))
			s.PushOne(rest[:n:n])
			rest = rest[n:]
		}
		s.PushOne(rest)
		r := s.NewReader()
		pos := 0
		ops := memtest.NewOps(data)
		short := func() error {
			if pos == len(flat) {
				return io.EOF
			}
			return io.ErrUnexpectedEOF
		}
		// fixed checks a fixed-size read of n bytes against want(flat[pos:]).
		fixed := func(name string, n int, got uint64, err error, want func([]byte) uint64) {
			t.Helper()
			if pos+n > len(flat) {
				if err != short() {
					t.Fatalf("%s at %d of %d: err %v, want %v", name, pos, len(flat), err, short())
				}
				return
			}
			if err != nil || got != want(flat[pos:]) {
				t.Fatalf("%s at %d: %#x, %v; want %#x", name, pos, got, err, want(flat[pos:]))
			}
			pos += n
		}
		be, le := binary.BigEndian, binary.LittleEndian
		for step := 0; ops.More(); step++ {
			op := ops.Byte() % 24
			switch op {
			case 0:
				c, err := r.ReadByte()
				if pos == len(flat) {
					if err != io.EOF {
						t.Fatalf("ReadByte at the end: %v", err)
					}
				} else {
					if err != nil || c != flat[pos] {
						t.Fatalf("ReadByte at %d = %d, %v", pos, c, err)
					}
					pos++
				}
			case 1:
				v, err := r.Uint16BE()
				fixed("Uint16BE", 2, uint64(v), err, func(b []byte) uint64 { return uint64(be.Uint16(b)) })
			case 2:
				v, err := r.Uint16LE()
				fixed("Uint16LE", 2, uint64(v), err, func(b []byte) uint64 { return uint64(le.Uint16(b)) })
			case 3:
				v, err := r.Uint24BE()
				fixed("Uint24BE", 3, uint64(v), err, func(b []byte) uint64 { return uint64(be.Uint32(append([]byte{0}, b[:3]...))) })
			case 4:
				v, err := r.Uint24LE()
				fixed("Uint24LE", 3, uint64(v), err, func(b []byte) uint64 { return uint64(le.Uint32(append(b[:3:3], 0))) })
			case 5:
				v, err := r.Uint32BE()
				fixed("Uint32BE", 4, uint64(v), err, func(b []byte) uint64 { return uint64(be.Uint32(b)) })
			case 6:
				v, err := r.Uint32LE()
				fixed("Uint32LE", 4, uint64(v), err, func(b []byte) uint64 { return uint64(le.Uint32(b)) })
			case 7:
				v, err := r.Uint64BE()
				fixed("Uint64BE", 8, v, err, be.Uint64)
			case 8:
				v, err := r.Uint64LE()
				fixed("Uint64LE", 8, v, err, le.Uint64)
			case 9:
				k := int(ops.Byte() % 9)
				v, err := r.UintBE(k)
				fixed("UintBE", k, v, err, func(b []byte) uint64 {
					var x uint64
					for _, c := range b[:k] {
						x = x<<8 | uint64(c)
					}
					return x
				})
			case 10, 11:
				var got uint64
				var err error
				if op == 10 {
					got, err = r.Uvarint()
				} else {
					var v int64
					v, err = r.Varint()
					got = uint64(v)
				}
				want, n := readUvarint(flat[pos:])
				if op == 11 {
					want = uint64(int64(want>>1) ^ -int64(want&1))
				}
				switch {
				case n > 0:
					if err != nil || got != want {
						t.Fatalf("varint at %d = %d, %v; want %d", pos, got, err, want)
					}
					pos += n
				case n < 0:
					if err != buffer.ErrOverflow {
						t.Fatalf("overflowing varint at %d: %v", pos, err)
					}
				default:
					if err != short() {
						t.Fatalf("cut-short varint at %d: %v, want %v", pos, err, short())
					}
				}
			case 12:
				v, n, err := r.LEB128()
				var want uint64
				k := 0
				for ; pos+k < len(flat) && k < 8; k++ {
					c := flat[pos+k]
					want |= uint64(c&0x7f) << (7 * k)
					if c < 0x80 || k == 7 {
						k++
						break
					}
				}
				done := k > 0 && (flat[pos+k-1] < 0x80 || k == 8)
				if !done {
					if err != short() {
						t.Fatalf("LEB128 at %d: %v, want %v", pos, err, short())
					}
				} else {
					if err != nil || v != want || n != k {
						t.Fatalf("LEB128 at %d = %d, %d, %v; want %d, %d", pos, v, n, err, want, k)
					}
					pos += k
				}
			case 13, 14, 15, 16: // ReadBytes, Peek, ReadBytesScratch, PeekScratch
				n := int(ops.Byte() % 24)
				var got []byte
				var err error
				scratch := make([]byte, 0, 8)
				switch op {
				case 13:
					got, err = r.ReadBytes(n)
				case 14:
					got, err = r.Peek(n)
				case 15:
					got, err = r.ReadBytesScratch(n, scratch)
				case 16:
					got, err = r.PeekScratch(n, scratch)
				}
				if pos+n > len(flat) {
					if err != short() || got != nil {
						t.Fatalf("op %d(%d) at %d of %d: %v", op, n, pos, len(flat), err)
					}
					break
				}
				if err != nil || !bytes.Equal(got, flat[pos:pos+n]) {
					t.Fatalf("op %d(%d) at %d = %q, %v", op, n, pos, got, err)
				}
				if op == 13 || op == 15 {
					pos += n
				}
			case 17:
				n := int(ops.Byte() % 24)
				err := r.Skip(n)
				if pos+n > len(flat) {
					if err != short() {
						t.Fatalf("Skip(%d) at %d of %d: %v", n, pos, len(flat), err)
					}
				} else {
					if err != nil {
						t.Fatalf("Skip: %v", err)
					}
					pos += n
				}
			case 18:
				n := int(ops.Byte() % 24)
				err := r.Unread(n)
				if n > pos {
					if err != buffer.ErrUnread {
						t.Fatalf("Unread(%d) at %d: %v", n, pos, err)
					}
				} else {
					if err != nil {
						t.Fatalf("Unread: %v", err)
					}
					pos -= n
				}
			case 19:
				p := make([]byte, ops.Byte()%24)
				n, err := r.Read(p)
				want := min(len(p), len(flat)-pos)
				if pos == len(flat) {
					if n != 0 || err != io.EOF {
						t.Fatalf("Read at the end = %d, %v", n, err)
					}
					break
				}
				if n != want || err != nil || !bytes.Equal(p[:n], flat[pos:pos+n]) {
					t.Fatalf("Read(%d) at %d = %d, %v", len(p), pos, n, err)
				}
				pos += n
			case 20: // RangeN, stopping after k pieces
				n, stop := int(ops.Byte()%24), int(ops.Byte()%4)
				var got []byte
				calls := 0
				err := r.RangeN(n, func(b []byte) bool {
					got = append(got, b...)
					calls++
					return calls != stop
				})
				if pos+n > len(flat) {
					if err != short() || calls != 0 {
						t.Fatalf("RangeN(%d) at %d of %d: %v, %d calls", n, pos, len(flat), err, calls)
					}
					break
				}
				if err != nil || !bytes.Equal(got, flat[pos:pos+len(got)]) || calls == stop && len(got) > n || calls != stop && len(got) != n {
					t.Fatalf("RangeN(%d) at %d = %q, %v", n, pos, got, err)
				}
				pos += len(got)
			case 21: // Range, stopping after k pieces
				stop := int(ops.Byte() % 4)
				var got []byte
				calls := 0
				r.Range(func(b []byte) bool {
					got = append(got, b...)
					calls++
					return calls != stop
				})
				if !bytes.Equal(got, flat[pos:pos+len(got)]) || calls != stop && pos+len(got) != len(flat) {
					t.Fatalf("Range at %d = %q", pos, got)
				}
				pos += len(got)
			case 22:
				var out bytes.Buffer
				n, err := r.WriteTo(&out)
				if err != nil || int(n) != len(flat)-pos || !bytes.Equal(out.Bytes(), flat[pos:]) {
					t.Fatalf("WriteTo at %d = %d, %v", pos, n, err)
				}
				pos = len(flat)
			case 23:
				var clipped []byte
				r.ClipFront(func(b []byte) { clipped = append(clipped, b...) })
				if !bytes.Equal(clipped, flat[:len(clipped)]) || len(clipped) > pos {
					t.Fatalf("ClipFront gave %q at %d", clipped, pos)
				}
				flat = flat[pos:]
				pos = 0
				if s.Len() != len(flat) || !bytes.Equal(s.ToBytes(), flat) {
					t.Fatalf("after ClipFront the Slice holds %q, want %q", s.ToBytes(), flat)
				}
			}
			if r.Offset() != pos || r.Remaining() != len(flat)-pos {
				t.Fatalf("step %d (op %d): Offset %d Remaining %d; model %d of %d", step, op, r.Offset(), r.Remaining(), pos, len(flat))
			}
		}
	})
}

// FuzzFixedPool decodes the input into Checkout, writes (some past the
// pool's size), Close, a second Close or Free, and stale Close on one
// goroutine, and checks them against a model of the pool: hits while a
// buffer is idle, misses after, expansions once per checkout under Expand,
// refusals under Strict, ErrClosed for every Close of a buffer no longer
// checked out (a double-free panic for a Free), and Len and the stats equal
// to the model's counts. A memtest.Model checks that no two live buffers
// overlap and that their bytes stay as written.
//
// Between the correct calls it makes the misuse table's mistakes (a write
// through a closed *Buffer, a write through a view kept past Close into an
// idle buffer, the Free of a copied Buffer in the checked build, a Truncate
// past the length) and requires, after each step, that memkit either
// panicked with its report or left every live buffer holding its bytes.
func FuzzFixedPool(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 10, 2, 0, 3, 0, 0, 1, 50, 2, 1})
	f.Add([]byte{0, 0, 1, 0, 5, 2, 0, 0, 5, 1, 0, 3, 5, 0, 0, 0, 0, 0, 5, 0, 0})
	f.Add([]byte{1, 0, 1, 100, 0, 1, 70, 2, 0, 3, 0, 4, 0, 0, 0, 0})
	f.Add([]byte{5, 0, 0, 0, 0, 0, 2, 0, 2, 0, 3, 1, 4, 0, 2, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		cfg := ops.Byte()
		count, size := 1+int(cfg>>2)%4, 32
		strict := cfg&1 == 1
		var opts []buffer.FixedOption
		if strict {
			opts = append(opts, buffer.WithOverflow(buffer.Strict))
		}
		p := mustFixed(t, count, size, opts...)
		type live struct {
			b        *buffer.Buffer
			hit      bool
			expanded bool
			blk      int // index in m, or -1 while empty
		}
		m := memtest.NewModel(0)
		var (
			lives                              []*live
			closed                             []*buffer.Buffer
			views                              [][]byte // the storage of closed buffers, kept past Close
			hits, misses, expansions, refusals uint64
			frees, bad                         uint64
		)
		// staleHeader picks a closed *Buffer, or nil if there is none or
		// the one picked serves a live checkout again.
		staleHeader := func() *buffer.Buffer {
			if len(closed) == 0 {
				return nil
			}
			b := closed[int(ops.Byte())%len(closed)]
			for _, l := range lives {
				if l.b == b {
					return nil
				}
			}
			return b
		}
		// liveShares reports whether a live checkout holds the storage
		// of v.
		liveShares := func(v []byte) bool {
			for _, l := range lives {
				if l.b.Cap() > 0 && memtest.Overlap(l.b.Bytes()[:l.b.Cap()], v) {
					return true
				}
			}
			return false
		}
		// reindex fixes blk indexes after memtest.Model.Remove moved the
		// last block into a hole.
		reindex := func(removed int) {
			for _, l := range lives {
				if l.blk == len(m.Live) {
					l.blk = removed
				}
			}
		}
		for step := 0; ops.More(); step++ {
			switch ops.Byte() % 6 {
			case 0: // Checkout
				var b *buffer.Buffer
				if stop := mistake(t, step, m, func() { b = p.Checkout() }); stop {
					return // a write after free was reported: the pool lost that buffer
				}
				l := &live{b: b, blk: -1}
				liveHits := 0
				for _, x := range lives {
					if x.hit {
						liveHits++
					}
				}
				l.hit = liveHits < count
				if l.hit {
					hits++
				} else {
					misses++
				}
				if b.Len() != 0 || b.Cap() != size {
					t.Fatalf("step %d: checkout len %d cap %d", step, b.Len(), b.Cap())
				}
				lives = append(lives, l)
			case 1: // Write to a live buffer
				if len(lives) == 0 {
					continue
				}
				l := lives[int(ops.Byte())%len(lives)]
				n := int(ops.Byte() % 48)
				if l.blk >= 0 {
					if _, err := m.Remove(l.blk); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					reindex(l.blk)
					l.blk = -1
				}
				before := l.b.Len()
				_, err := l.b.Write(make([]byte, n))
				switch {
				case before+n <= size:
					if err != nil {
						t.Fatalf("step %d: Write within the size: %v", step, err)
					}
				case strict:
					refusals++
					if err != io.ErrShortWrite || l.b.Len() != before {
						t.Fatalf("step %d: Strict Write past the size = %v, len %d", step, err, l.b.Len())
					}
				default:
					if err != nil {
						t.Fatalf("step %d: Expand Write: %v", step, err)
					}
					if !l.expanded {
						l.expanded = true
						expansions++
					}
				}
				if l.b.Len() > 0 {
					i, err := m.Add(l.b.Bytes())
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					l.blk = i
				}
			case 2: // Close
				if len(lives) == 0 {
					continue
				}
				k := int(ops.Byte()) % len(lives)
				l := lives[k]
				if l.blk >= 0 {
					if _, err := m.Remove(l.blk); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					reindex(l.blk)
				}
				view := l.b.Bytes()[:l.b.Cap()]
				expanded := l.b.Owned()
				if err := l.b.Close(); err != nil {
					t.Fatalf("step %d: Close: %v", step, err)
				}
				frees++
				lives = append(lives[:k], lives[k+1:]...)
				closed = append(closed, l.b)
				if !expanded && len(view) > 0 {
					views = append(views, view)
				}
			case 3: // Close again a closed buffer, unless its header serves a live checkout
				b := staleHeader()
				if b == nil {
					continue
				}
				before := p.Len()
				if ops.Byte()&1 == 0 {
					if err := b.Close(); err != buffer.ErrClosed {
						t.Fatalf("step %d: second Close = %v", step, err)
					}
				} else {
					checkDoubleFree(t, func() { b.Free() })
				}
				bad++
				if p.Len() != before {
					t.Fatalf("step %d: a second Close changed Len", step)
				}
			case 4:
				if err := m.VerifyAll(); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			case 5: // a mistake of the misuse table
				switch ops.Byte() % 4 {
				case 0: // a write through a closed *Buffer no checkout uses
					b := staleHeader()
					if b == nil {
						continue
					}
					// Until the buffer's next checkout detaches it, a
					// stale header still holds the idle storage.
					fits, owned := false, false
					if !checked.Enabled { // the checked build panics at any use
						fits, owned = b.Cap()-b.Len() >= len("stale"), b.Owned()
					}
					mistake(t, step, m, func() { b.Write([]byte("stale")) })
					switch {
					case checked.Enabled || fits: // StaleHandle; or the bytes land in the idle buffer
					case strict:
						refusals++
					case !owned:
						expansions++
					}
				case 1: // a write through a view kept past Close, into an idle buffer
					if len(views) == 0 {
						continue
					}
					v := views[int(ops.Byte())%len(views)]
					if liveShares(v) {
						continue
					}
					v[int(ops.Byte())%len(v)] ^= 0x5a
				case 2: // a Free of a copy of a live checkout (the release build does not catch it)
					if !checked.Enabled || len(lives) == 0 {
						continue
					}
					cp := copyOf(lives[int(ops.Byte())%len(lives)].b)
					mistake(t, step, m, func() { cp.Free() })
				case 3: // Truncate past the length of a live checkout
					if len(lives) == 0 {
						continue
					}
					l := lives[int(ops.Byte())%len(lives)]
					mistake(t, step, m, func() { l.b.Truncate(l.b.Len() + 1) })
				}
			}
			liveHits := 0
			for _, l := range lives {
				if l.hit {
					liveHits++
				}
			}
			if p.Len() != count-liveHits {
				t.Fatalf("step %d: Len %d, model %d", step, p.Len(), count-liveHits)
			}
			st := readStats(p)
			want := [...]uint64{hits + misses, frees, misses, expansions, refusals, bad, uint64(len(lives))}
			got := [...]uint64{st.Allocs, st.Frees, st.HeapFallbacks, st.Grows, st.Failures, st.BadFrees, st.LiveObjects}
			if got != want {
				t.Fatalf("step %d: stats (allocs, frees, fallbacks, grows, failures, bad frees, live) = %v, model %v", step, got, want)
			}
		}
		if err := memtest.CheckDisjoint(m); err != nil {
			t.Fatal(err)
		}
		for _, l := range lives {
			l.b.Close()
		}
	})
}

// FuzzJSON decodes the input into a sequence of JSON writer calls, with
// keys, strings, numbers and times taken from the input, and checks them
// against a validating model: Err() must be nil exactly when the model
// accepts the whole sequence, and then the output must be valid JSON, equal
// byte for byte to what encoding/json writes for the same values, and
// decode with encoding/json to those values. When a call is rejected, the
// output must be what the calls before it wrote.
func FuzzJSON(f *testing.F) {
	f.Add([]byte{2, 4, 1, 'a', 6, 1, 2, 3, 4, 5, 6, 7, 8, 0, 9, 1, 3})
	f.Add([]byte{0, 5, 3, 'x', '<', 0xff, 8, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 10, 9, 0, 1})
	f.Add([]byte{13, 2, 4, 2, 0xe2, 0x80, 11, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3})
	f.Add([]byte{0, 12, 7, '{', '"', 'a', '"', ':', '1', '}', 1})
	f.Add([]byte{1})
	f.Add([]byte{2, 4, 0, 4, 0, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		b := buffer.Get()
		defer b.Free()
		j := buffer.NewJSON(b)
		var md jsonModel
		md.html = true
		str := func() string {
			n := int(ops.Byte() % 12)
			s := make([]byte, n)
			for i := range s {
				s[i] = ops.Byte()
			}
			return string(s)
		}
		u64 := func() uint64 {
			var a [8]byte
			for i := range a {
				a[i] = ops.Byte()
			}
			return binary.LittleEndian.Uint64(a[:])
		}
		for ops.More() {
			switch op := ops.Byte() % 15; op {
			case 0:
				j.BeginArray()
				md.begin(false)
			case 1:
				j.EndArray()
				md.end(false)
			case 2:
				j.BeginObject()
				md.begin(true)
			case 3:
				j.EndObject()
				md.end(true)
			case 4:
				k := str()
				j.Key(k)
				md.key(k)
			case 5:
				s := str()
				j.String(s)
				md.value(s, true)
			case 6:
				v := int64(u64()) >> (ops.Byte() % 64)
				j.Int(v)
				md.value(v, true)
			case 7:
				v := u64() >> (ops.Byte() % 64)
				j.Uint(v)
				md.value(v, true)
			case 8:
				v := math.Float64frombits(u64())
				j.Float(v)
				md.value(v, !math.IsNaN(v) && !math.IsInf(v, 0))
			case 9:
				v := ops.Byte()&1 == 1
				j.Bool(v)
				md.value(v, true)
			case 10:
				j.Null()
				md.value(nil, true)
			case 11:
				tm := time.Unix(int64(u64()%(1<<40))-(1<<39), int64(ops.Uint16())).In(time.FixedZone("z", (int(ops.Uint16())-32768)*5))
				j.Time(tm)
				_, err := json.Marshal(tm)
				md.value(tm, err == nil)
			case 12:
				raw := []byte(str())
				if len(raw) == 0 && ops.Byte()&1 == 1 {
					raw = nil // writes null, as a nil json.RawMessage
				}
				j.Raw(raw)
				md.value(json.RawMessage(raw), raw == nil || json.Valid(raw))
			case 13:
				md.html = !md.html
				j.SetEscapeHTML(md.html)
			case 14:
				v := math.Float32frombits(uint32(u64()))
				j.Float32(v)
				md.value(v, !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0))
			}
			// A rejected call writes nothing, so the output always equals
			// the model's.
			if !bytes.Equal(b.Bytes(), md.out.Bytes()) {
				t.Fatalf("output %q\nmodel  %q (failed %v)", b.Bytes(), md.out.Bytes(), md.failed)
			}
		}
		err := j.Err()
		ok := md.complete()
		if (err == nil) != ok {
			t.Fatalf("Err() = %v, model accepts: %v (output %q)", err, ok, b.Bytes())
		}
		if err != nil {
			if !errors.Is(err, buffer.ErrJSON) && err != buffer.ErrNonFinite {
				t.Fatalf("error %v matches neither ErrJSON nor ErrNonFinite", err)
			}
			return
		}
		if !json.Valid(b.Bytes()) {
			t.Fatalf("accepted output is not valid JSON: %q", b.Bytes())
		}
		dec := json.NewDecoder(bytes.NewReader(b.Bytes()))
		dec.UseNumber()
		var got any
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("decoding %q: %v", b.Bytes(), err)
		}
		if err := sameValue(got, md.root); err != nil {
			t.Fatalf("decoded %q: %v", b.Bytes(), err)
		}
	})
}

// readUvarint decodes a varint at the start of b as binary.ReadUvarint
// does: n > 0 bytes read, n < 0 for an overflow (ten bytes without an end,
// or a tenth byte past 1), n == 0 if b ends first.
func readUvarint(b []byte) (uint64, int) {
	var x uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if i == len(b) {
			return 0, 0
		}
		c := b[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -1
			}
			return x | uint64(c)<<(7*i), i + 1
		}
		x |= uint64(c&0x7f) << (7 * i)
	}
	return 0, -1
}

// jsonModel is FuzzJSON's model of a JSON writer: the containers open, the
// expected output, built by encoding/json one value at a time, and the
// values written, as a tree.
type jsonModel struct {
	out     bytes.Buffer
	html    bool
	failed  bool
	stack   []*jsonNode // open containers
	pending *string     // a key waiting for its value
	root    any
	done    bool
	wrote   []bool // per open container: a member was written
}

type jsonNode struct {
	obj  bool
	keys []string
	vals []any
}

func (md *jsonModel) marshal(v any) []byte {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(md.html)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

// valueDue checks that a value may come now and writes its comma.
func (md *jsonModel) valueDue() bool {
	if md.failed {
		return false
	}
	if len(md.stack) == 0 {
		if md.done {
			md.failed = true
			return false
		}
		return true
	}
	top := md.stack[len(md.stack)-1]
	if top.obj && md.pending == nil {
		md.failed = true
		return false
	}
	if !top.obj && md.wrote[len(md.wrote)-1] {
		md.out.WriteByte(',')
	}
	return true
}

// place records v as the value just written.
func (md *jsonModel) place(v any) {
	if len(md.stack) == 0 {
		md.root, md.done = v, true
		return
	}
	top := md.stack[len(md.stack)-1]
	if top.obj {
		top.keys = append(top.keys, *md.pending)
		md.pending = nil
	}
	top.vals = append(top.vals, v)
	md.wrote[len(md.wrote)-1] = true
}

func (md *jsonModel) value(v any, ok bool) {
	if md.failed {
		return
	}
	if !ok {
		md.failed = true
		return
	}
	if !md.valueDue() {
		return
	}
	md.out.Write(md.marshal(v)) // a json.RawMessage compacted and escaped
	md.place(v)
}

func (md *jsonModel) begin(obj bool) {
	if md.failed {
		return
	}
	if len(md.stack) == buffer.MaxJSONDepth {
		md.failed = true
		return
	}
	if !md.valueDue() {
		return
	}
	n := &jsonNode{obj: obj}
	md.place(n)
	md.stack = append(md.stack, n)
	md.wrote = append(md.wrote, false)
	md.out.WriteByte("[{"[b2i(obj)])
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (md *jsonModel) end(obj bool) {
	if md.failed {
		return
	}
	if len(md.stack) == 0 || md.stack[len(md.stack)-1].obj != obj || md.pending != nil {
		md.failed = true
		return
	}
	md.stack = md.stack[:len(md.stack)-1]
	md.wrote = md.wrote[:len(md.wrote)-1]
	md.out.WriteByte("]}"[b2i(obj)])
}

func (md *jsonModel) key(k string) {
	if md.failed {
		return
	}
	if len(md.stack) == 0 || !md.stack[len(md.stack)-1].obj || md.pending != nil {
		md.failed = true
		return
	}
	if md.wrote[len(md.wrote)-1] {
		md.out.WriteByte(',')
	}
	md.out.Write(md.marshal(k))
	md.out.WriteByte(':')
	md.pending = &k
}

func (md *jsonModel) complete() bool { return !md.failed && md.done && len(md.stack) == 0 }

// sameValue compares a value decoded by encoding/json (with UseNumber)
// with the model's.
func sameValue(got, want any) error {
	switch w := want.(type) {
	case *jsonNode:
		if w.obj {
			g, ok := got.(map[string]any)
			if !ok {
				return fmt.Errorf("got %T, want an object", got)
			}
			last := map[string]any{}
			for i, k := range w.keys {
				last[string([]rune(k))] = w.vals[i]
			}
			if len(g) != len(last) {
				return fmt.Errorf("object has %d keys, want %d", len(g), len(last))
			}
			for k, v := range last {
				if err := sameValue(g[k], v); err != nil {
					return fmt.Errorf("key %q: %w", k, err)
				}
			}
			return nil
		}
		g, ok := got.([]any)
		if !ok || len(g) != len(w.vals) {
			return fmt.Errorf("got %v, want an array of %d", got, len(w.vals))
		}
		for i := range g {
			if err := sameValue(g[i], w.vals[i]); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	case string:
		if got != string([]rune(w)) {
			return fmt.Errorf("got %q, want %q", got, w)
		}
	case int64:
		if n, ok := got.(json.Number); !ok || string(n) != strconv.FormatInt(w, 10) {
			return fmt.Errorf("got %v, want %d", got, w)
		}
	case uint64:
		if n, ok := got.(json.Number); !ok || string(n) != strconv.FormatUint(w, 10) {
			return fmt.Errorf("got %v, want %d", got, w)
		}
	case float64:
		n, ok := got.(json.Number)
		if !ok {
			return fmt.Errorf("got %T, want a number", got)
		}
		if f, err := strconv.ParseFloat(string(n), 64); err != nil || f != w || math.Signbit(f) != math.Signbit(w) {
			return fmt.Errorf("got %v, want %v", n, w)
		}
	case float32:
		n, ok := got.(json.Number)
		if !ok {
			return fmt.Errorf("got %T, want a number", got)
		}
		if f, err := strconv.ParseFloat(string(n), 32); err != nil || float32(f) != w || math.Signbit(f) != math.Signbit(float64(w)) {
			return fmt.Errorf("got %v, want float32 %v", n, w)
		}
	case bool, nil:
		if got != want {
			return fmt.Errorf("got %v, want %v", got, want)
		}
	case time.Time:
		s, ok := got.(string)
		if !ok {
			return fmt.Errorf("got %T, want a time", got)
		}
		// encoding/json drops a zone's seconds (RFC 3339 has none): the
		// value is the one it reads back.
		var rt time.Time
		enc, _ := json.Marshal(w)
		json.Unmarshal(enc, &rt)
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !tm.Equal(rt) {
			return fmt.Errorf("got %q, want %v", s, rt)
		}
	case json.RawMessage:
		if w == nil {
			w = json.RawMessage("null")
		}
		dec := json.NewDecoder(bytes.NewReader(w))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if !reflect.DeepEqual(got, v) {
			return fmt.Errorf("got %v, want raw %s", got, strings.TrimSpace(string(w)))
		}
	default:
		return fmt.Errorf("model value of type %T", want)
	}
	return nil
}

// mistake runs f, a step of a fuzz target that may make or meet a mistake
// of the misuse table, and checks that it either returned or panicked as
// memkit reports a mistake — a "memkit/buffer: " message, or a
// *checked.Misuse — and that every live buffer of the model still holds
// exactly its bytes. It reports whether the run must stop: after a write
// after free, whose report leaves the pool one buffer short.
func mistake(t *testing.T, step int, m *memtest.Model, f func()) (stop bool) {
	t.Helper()
	r := recovered(f)
	if r != nil {
		mu, isMisuse := r.(*checked.Misuse)
		msg, isString := r.(string)
		switch {
		case isMisuse && mu.Allocator == "buffer":
			stop = mu.Kind == checked.UseAfterFree
		case isString && strings.HasPrefix(msg, "memkit/buffer: "):
		default:
			panic(r)
		}
	}
	if err := m.VerifyAll(); err != nil {
		t.Fatalf("step %d: after a mistake (panic %v): %v", step, r, err)
	}
	return stop
}

// recovered runs f and returns what it panicked with, or nil.
func recovered(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// FuzzPool drives up to eight Buffers of one Pool at once — Get, writes of
// tagged bytes from 0 to about 9 KiB (so that storage grows and idle
// headers keep storage of many classes), Truncate and Free — and makes the
// Pool's mistakes that the Free doc says are caught: a second Free before
// the header is handed out again (it must panic with memkit's double-free
// message, or report a double free in the checked build), and a write
// through the freed Buffer before then (it may panic with a memkit message;
// either way no live Buffer's bytes may change, and the next Get must hand
// out an empty Buffer). After every step each live Buffer's bytes must be
// what the model wrote.
func FuzzPool(f *testing.F) {
	f.Add([]byte{0, 0, 1, 5, 1, 9, 2, 0, 3, 0, 1, 1, 200, 2, 1, 4, 7, 0, 1, 0, 90})
	f.Add([]byte{0, 1, 0, 255, 2, 0, 4, 255, 0, 1, 0, 3, 3, 0, 2, 0, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := buffer.NewPool()
		if err != nil {
			t.Fatal(err)
		}
		type live struct {
			b    *buffer.Buffer
			want []byte
		}
		var lives []live
		var stale *buffer.Buffer // freed, and not yet handed out again
		next := func() int {
			if len(in) == 0 {
				return 0
			}
			v := int(in[0])
			in = in[1:]
			return v
		}
		for step := 0; len(in) > 0; step++ {
			op, arg := next()%6, next()
			switch {
			case op == 0 && len(lives) < 8: // Get
				b := p.Get()
				stale = nil // a header may serve again: a late call is the owner's
				if b.Len() != 0 {
					t.Fatalf("step %d: Get returned %d bytes", step, b.Len())
				}
				lives = append(lives, live{b: b})
			case op == 1 && len(lives) > 0: // write tagged bytes
				l := &lives[arg%len(lives)]
				n := arg * 37
				data := make([]byte, n)
				for i := range data {
					data[i] = byte(step*31 + i)
				}
				if k, err := l.b.Write(data); k != n || err != nil {
					t.Fatalf("step %d: Write = %d, %v", step, k, err)
				}
				l.want = append(l.want, data...)
			case op == 2 && len(lives) > 0: // Free
				i := arg % len(lives)
				lives[i].b.Free()
				stale = lives[i].b
				lives = append(lives[:i], lives[i+1:]...)
			case op == 3 && stale != nil: // mistake: a second Free
				checkDoubleFree(t, stale.Free)
			case op == 4 && stale != nil: // mistake: a write after Free
				r := recovered(func() { stale.Write(bytes.Repeat([]byte{0xEE}, arg*40)) })
				if mu, ok := r.(*checked.Misuse); r != nil && !(ok && mu.Allocator == "buffer") {
					if msg, ok := r.(string); !ok || !strings.HasPrefix(msg, "memkit/") {
						panic(r)
					}
				}
				stale = nil // its state after the mistake is not the model's
			case op == 5 && len(lives) > 0: // Truncate
				l := &lives[arg%len(lives)]
				n := arg % (len(l.want) + 1)
				l.b.Truncate(n)
				l.want = l.want[:n]
			}
			for i, l := range lives {
				if !bytes.Equal(l.b.Bytes(), l.want) {
					t.Fatalf("step %d: live Buffer %d holds %d bytes, not the %d written", step, i, l.b.Len(), len(l.want))
				}
			}
		}
		for _, l := range lives {
			l.b.Free()
		}
	})
}
