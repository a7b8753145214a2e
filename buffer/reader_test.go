package buffer_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"testing"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

// split cuts data into a Slice at the given lengths (the rest in a last
// segment), with an empty segment between every two.
func split(data []byte, lens ...int) buffer.Slice {
	var s buffer.Slice
	for _, n := range lens {
		n = min(n, len(data))
		s.PushOne(data[:n:n])
		s.PushOne(nil)
		data = data[n:]
	}
	s.PushOne(data)
	return s
}

func TestReader_ReadByteAcrossSegments(t *testing.T) {
	s := split([]byte("abcdef"), 1, 0, 2, 1)
	r := s.NewReader()
	var got []byte
	for {
		c, err := r.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
		if r.Offset() != len(got) || r.Remaining() != 6-len(got) {
			t.Fatalf("Offset %d Remaining %d after %d bytes", r.Offset(), r.Remaining(), len(got))
		}
	}
	if string(got) != "abcdef" {
		t.Fatalf("read %q", got)
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatal("ReadByte past the end did not repeat io.EOF")
	}
}

func TestReader_IntegersMatchEncodingBinary(t *testing.T) {
	data := make([]byte, 64)
	for i := range data {
		data[i] = byte(i*37 + 11)
	}
	be, le := binary.BigEndian, binary.LittleEndian
	for cut := 1; cut < 9; cut++ {
		for start := range 9 {
			s := split(data, start, cut, cut)
			check := func(name string, got, want uint64, err error) {
				t.Helper()
				if err != nil || got != want {
					t.Fatalf("cut %d start %d %s = %#x, %v; want %#x", cut, start, name, got, err, want)
				}
			}
			for _, tc := range []struct {
				name string
				n    int
				read func(r *buffer.Reader) (uint64, error)
				want func(b []byte) uint64
			}{
				{"Uint16BE", 2, func(r *buffer.Reader) (uint64, error) { v, err := r.Uint16BE(); return uint64(v), err }, func(b []byte) uint64 { return uint64(be.Uint16(b)) }},
				{"Uint16LE", 2, func(r *buffer.Reader) (uint64, error) { v, err := r.Uint16LE(); return uint64(v), err }, func(b []byte) uint64 { return uint64(le.Uint16(b)) }},
				{"Uint24BE", 3, func(r *buffer.Reader) (uint64, error) { v, err := r.Uint24BE(); return uint64(v), err }, func(b []byte) uint64 { return uint64(b[0])<<16 | uint64(b[1])<<8 | uint64(b[2]) }},
				{"Uint24LE", 3, func(r *buffer.Reader) (uint64, error) { v, err := r.Uint24LE(); return uint64(v), err }, func(b []byte) uint64 { return uint64(b[2])<<16 | uint64(b[1])<<8 | uint64(b[0]) }},
				{"Uint32BE", 4, func(r *buffer.Reader) (uint64, error) { v, err := r.Uint32BE(); return uint64(v), err }, func(b []byte) uint64 { return uint64(be.Uint32(b)) }},
				{"Uint32LE", 4, func(r *buffer.Reader) (uint64, error) { v, err := r.Uint32LE(); return uint64(v), err }, func(b []byte) uint64 { return uint64(le.Uint32(b)) }},
				{"Uint64BE", 8, func(r *buffer.Reader) (uint64, error) { return r.Uint64BE() }, func(b []byte) uint64 { return be.Uint64(b) }},
				{"Uint64LE", 8, func(r *buffer.Reader) (uint64, error) { return r.Uint64LE() }, func(b []byte) uint64 { return le.Uint64(b) }},
				{"UintBE(5)", 5, func(r *buffer.Reader) (uint64, error) { return r.UintBE(5) }, func(b []byte) uint64 { return be.Uint64(append(make([]byte, 3), b[:5]...)) }},
			} {
				r := s.NewReader()
				r.Skip(start)
				got, err := tc.read(&r)
				check(tc.name, got, tc.want(data[start:]), err)
				if r.Offset() != start+tc.n {
					t.Fatalf("%s moved to %d, want %d", tc.name, r.Offset(), start+tc.n)
				}
			}
		}
	}
}

func TestReader_ShortReadsKeepThePosition(t *testing.T) {
	s := split([]byte("abc"), 1, 1)
	r := s.NewReader()
	r.ReadByte()
	pos := r.Offset()
	for name, f := range map[string]func() error{
		"Uint32BE":  func() error { _, err := r.Uint32BE(); return err },
		"Uint64LE":  func() error { _, err := r.Uint64LE(); return err },
		"Uint24LE":  func() error { _, err := r.Uint24LE(); return err },
		"UintBE":    func() error { _, err := r.UintBE(3); return err },
		"ReadBytes": func() error { _, err := r.ReadBytes(3); return err },
		"Peek":      func() error { _, err := r.Peek(3); return err },
		"Skip":      func() error { return r.Skip(3) },
		"RangeN":    func() error { return r.RangeN(3, func([]byte) bool { t.Fatal("RangeN called f"); return true }) },
	} {
		if err := f(); err != io.ErrUnexpectedEOF {
			t.Errorf("%s with 2 of its bytes left = %v, want io.ErrUnexpectedEOF", name, err)
		}
		if r.Offset() != pos {
			t.Fatalf("%s moved the Reader", name)
		}
	}
	r.Skip(2)
	for name, f := range map[string]func() error{
		"ReadByte": func() error { _, err := r.ReadByte(); return err },
		"Uint16BE": func() error { _, err := r.Uint16BE(); return err },
		"Uvarint":  func() error { _, err := r.Uvarint(); return err },
		"LEB128":   func() error { _, _, err := r.LEB128(); return err },
		"Read":     func() error { _, err := r.Read(make([]byte, 1)); return err },
		"ReadNil":  func() error { _, err := r.Read(nil); return err },
		"Skip":     func() error { return r.Skip(1) },
	} {
		if err := f(); err != io.EOF {
			t.Errorf("%s at the end = %v, want io.EOF", name, err)
		}
	}
	if err := r.Skip(0); err != nil {
		t.Fatal("Skip(0) at the end:", err)
	}
}

func TestReader_VarintsMatchEncodingBinary(t *testing.T) {
	values := []uint64{0, 1, 127, 128, 300, 16383, 16384, 1 << 32, 1<<63 - 1, 1 << 63, math.MaxUint64}
	var flat []byte
	for _, v := range values {
		flat = binary.AppendUvarint(flat, v)
		flat = binary.AppendVarint(flat, int64(v))
	}
	for cut := 1; cut < 12; cut++ {
		s := split(flat, cut, cut, cut, cut, cut, cut, cut, cut)
		r := s.NewReader()
		for _, v := range values {
			u, err := r.Uvarint()
			if err != nil || u != v {
				t.Fatalf("cut %d: Uvarint = %d, %v; want %d", cut, u, err, v)
			}
			i, err := r.Varint()
			if err != nil || i != int64(v) {
				t.Fatalf("cut %d: Varint = %d, %v; want %d", cut, i, err, int64(v))
			}
		}
	}
	for _, bad := range [][]byte{
		bytes.Repeat([]byte{0xff}, 11),
		append(bytes.Repeat([]byte{0xff}, 9), 2),
		append(bytes.Repeat([]byte{0x80}, 10), 0),
	} {
		if _, n := binary.Uvarint(bad); n >= 0 {
			t.Fatalf("binary.Uvarint(% x) did not overflow", bad)
		}
		for cut := 1; cut <= len(bad); cut++ {
			s := split(bad, cut)
			r := s.NewReader()
			if _, err := r.Uvarint(); err != buffer.ErrOverflow || r.Offset() != 0 {
				t.Fatalf("overflowing % x (cut %d) = %v at %d", bad, cut, err, r.Offset())
			}
		}
	}
	s := split([]byte{0x80, 0x80}, 1)
	r := s.NewReader()
	if _, err := r.Uvarint(); err != io.ErrUnexpectedEOF || r.Offset() != 0 {
		t.Fatalf("cut-short varint: %v at %d", err, r.Offset())
	}
}

func TestReader_LEB128(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		v    uint64
		n    int
		err  error
		left int
	}{
		{[]byte{0x05}, 5, 1, nil, 0},
		{[]byte{0x96, 0x01, 0xaa}, 150, 2, nil, 1},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 1<<32 - 1, 5, nil, 0},
		{bytes.Repeat([]byte{0x81}, 9), 0x81_0204_0810_2040 &^ (1 << 56) >> 0, 8, nil, 1}, // the 8th byte ends it
		{[]byte{0x80, 0x80}, 0, 0, io.ErrUnexpectedEOF, 2},
		{nil, 0, 0, io.EOF, 0},
	} {
		var want uint64
		if tc.n == 8 {
			for i := range 8 {
				want |= uint64(tc.in[i]&0x7f) << (7 * i)
			}
			tc.v = want
		}
		for cut := 1; cut <= max(len(tc.in), 1); cut++ {
			s := split(tc.in, cut)
			r := s.NewReader()
			v, n, err := r.LEB128()
			if v != tc.v || n != tc.n || err != tc.err || r.Remaining() != tc.left {
				t.Errorf("LEB128(% x) cut %d = %d, %d, %v, %d left; want %d, %d, %v, %d left",
					tc.in, cut, v, n, err, r.Remaining(), tc.v, tc.n, tc.err, tc.left)
			}
		}
	}
}

func TestReader_ReadBytesIsZeroCopyWithinASegment(t *testing.T) {
	seg1, seg2 := []byte("0123456789"), []byte("abcdefghij")
	s := buffer.NewSlice(seg1, seg2)
	r := s.NewReader()
	b, err := r.ReadBytes(4)
	if err != nil || string(b) != "0123" || !sameMemory(b, seg1) || cap(b) != 4 {
		t.Fatalf("ReadBytes within a segment = %q, %v, aliased %v, cap %d", b, err, sameMemory(b, seg1), cap(b))
	}
	p, _ := r.Peek(6)
	if string(p) != "456789" || !sameMemory(p, seg1[4:]) || r.Offset() != 4 {
		t.Fatalf("Peek = %q at %d", p, r.Offset())
	}
	p, _ = r.Peek(8)
	if string(p) != "456789ab" || r.Offset() != 4 {
		t.Fatalf("spanning Peek = %q at %d", p, r.Offset())
	}
	scratch := make([]byte, 0, 16)
	p, _ = r.PeekScratch(8, scratch)
	if string(p) != "456789ab" || !sameMemory(p, scratch[:1]) {
		t.Fatalf("PeekScratch = %q, in scratch %v", p, sameMemory(p, scratch[:1]))
	}
	b, _ = r.ReadBytesScratch(8, scratch)
	if string(b) != "456789ab" || !sameMemory(b, scratch[:1]) || r.Offset() != 12 {
		t.Fatalf("ReadBytesScratch = %q at %d", b, r.Offset())
	}
	b, _ = r.ReadBytesScratch(3, scratch)
	if string(b) != "cde" || !sameMemory(b, seg2[2:]) {
		t.Fatalf("ReadBytesScratch within a segment = %q", b)
	}
	b, _ = r.ReadBytesScratch(5, make([]byte, 2)) // scratch too small: a new slice
	if string(b) != "fghij" {
		t.Fatalf("ReadBytesScratch = %q", b)
	}
	r2 := s.NewReader()
	r2.Skip(8)
	b, _ = r2.ReadBytes(4)
	if string(b) != "89ab" || sameMemory(b, seg1[8:]) {
		t.Fatalf("spanning ReadBytes = %q, aliased %v", b, sameMemory(b, seg1[8:]))
	}
}

func TestReader_UnreadAndSkip(t *testing.T) {
	s := split([]byte("abcdefgh"), 3, 2)
	r := s.NewReader()
	r.Skip(7)
	if err := r.Unread(5); err != nil {
		t.Fatal(err)
	}
	if b, _ := r.ReadBytes(3); string(b) != "cde" {
		t.Fatalf("after Unread(5): %q", b)
	}
	if err := r.Unread(6); err != buffer.ErrUnread || r.Offset() != 5 {
		t.Fatalf("Unread past the start = %v at %d", err, r.Offset())
	}
	r.Unread(5)
	if err := r.UnreadByte(); err != buffer.ErrUnread || r.Offset() != 0 {
		t.Fatalf("UnreadByte at the start = %v", err)
	}
	if err := r.Unread(0); err != nil {
		t.Fatal(err)
	}
	r.Skip(8)
	r.UnreadByte()
	if c, _ := r.ReadByte(); c != 'h' {
		t.Fatalf("UnreadByte at the end then ReadByte = %c", c)
	}
	memtest.CheckPanic(t, "memkit/buffer: negative read count", func() { r.Unread(-1) })
	memtest.CheckPanic(t, "memkit/buffer: negative read count", func() { r.Skip(-1) })
	memtest.CheckPanic(t, "memkit/buffer: negative read count", func() { r.ReadBytes(-1) })
	memtest.CheckPanic(t, "memkit/buffer: negative read count", func() { r.Peek(-1) })
	memtest.CheckPanic(t, "memkit/buffer: negative read count", func() { r.RangeN(-1, nil) })
	memtest.CheckPanic(t, "memkit/buffer: negative read count", func() { r.UintBE(-1) })
}

func TestReader_RangeAndRangeN(t *testing.T) {
	s := split([]byte("abcdefgh"), 3, 2)
	r := s.NewReader()
	r.Skip(1)
	var got []string
	if err := r.RangeN(5, func(b []byte) bool { got = append(got, string(b)); return true }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != "bc" || got[1] != "de" || got[2] != "f" || r.Offset() != 6 {
		t.Fatalf("RangeN = %q at %d", got, r.Offset())
	}
	got = got[:0]
	r.Range(func(b []byte) bool { got = append(got, string(b)); return false })
	if len(got) != 1 || got[0] != "gh" || r.Remaining() != 0 {
		t.Fatalf("Range = %q, %d left", got, r.Remaining())
	}
	r = s.NewReader()
	got = got[:0]
	r.RangeN(4, func(b []byte) bool { got = append(got, string(b)); return false })
	if len(got) != 1 || got[0] != "abc" || r.Offset() != 3 {
		t.Fatalf("RangeN stopped by f = %q at %d", got, r.Offset())
	}
	r.Range(func(b []byte) bool { got = append(got, string(b)); return true })
	if len(got) != 3 || r.Remaining() != 0 {
		t.Fatalf("Range: %q", got)
	}
}

func TestReader_ReadAndWriteTo(t *testing.T) {
	s := split([]byte("hello, world"), 3, 4)
	r := s.NewReader()
	p := make([]byte, 5)
	if n, err := r.Read(p); n != 5 || err != nil || string(p) != "hello" {
		t.Fatalf("Read = %d %v %q", n, err, p)
	}
	if n, err := r.Read(p[:0]); n != 0 || err != nil {
		t.Fatalf("Read(empty) = %d, %v", n, err)
	}
	var out bytes.Buffer
	if n, err := r.WriteTo(&out); n != 7 || err != nil || out.String() != ", world" || r.Remaining() != 0 {
		t.Fatalf("WriteTo = %d, %v, %q", n, err, out.String())
	}
	r = s.NewReader()
	r.Skip(1)
	if n, err := r.WriteTo(shortWriter{}); n != 1 || err != io.ErrShortWrite || r.Offset() != 2 {
		t.Fatalf("WriteTo short = %d, %v, at %d", n, err, r.Offset())
	}
	all, err := io.ReadAll(&r)
	if err != nil || string(all) != "llo, world" {
		t.Fatalf("io.ReadAll = %q, %v", all, err)
	}
}

func TestReader_SeesSegmentsPushedLater(t *testing.T) {
	var s buffer.Slice
	r := s.NewReader()
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatal("empty Slice")
	}
	s.PushOne([]byte("ab"))
	if c, err := r.ReadByte(); c != 'a' || err != nil {
		t.Fatalf("after a push: %c %v", c, err)
	}
	r.ReadByte()
	s.PushOne([]byte("c"))
	if c, err := r.ReadByte(); c != 'c' || err != nil || r.Offset() != 3 {
		t.Fatalf("after a second push: %c %v", c, err)
	}
}

func TestReader_ClipFront(t *testing.T) {
	var s buffer.Slice
	owned := bytepool.Get(64)
	copy(owned, "OWNED---")
	s.PushOne([]byte("aaaa"))
	s.PushOwned(owned[:8])
	s.PushOne([]byte("bbbb"))
	s.PushOne([]byte("cccc"))
	r := s.NewReader()
	r.Skip(14) // into "bbbb"
	var recycled []string
	r.ClipFront(func(b []byte) { recycled = append(recycled, string(b)) })
	if len(recycled) != 1 || recycled[0] != "aaaa" {
		t.Fatalf("recycled %q", recycled)
	}
	checkPutAgainPanics(t, owned) // the owned segment went back to the pool
	if r.Offset() != 0 || s.Len() != 6 || s.Count() != 2 || string(s.ToBytes()) != "bbcccc" {
		t.Fatalf("after ClipFront: Offset %d, Len %d, Count %d, %q", r.Offset(), s.Len(), s.Count(), s.ToBytes())
	}
	if err := r.UnreadByte(); err != buffer.ErrUnread {
		t.Fatal("Unread before the clip point")
	}
	if b, _ := r.ReadBytes(4); string(b) != "bbcc" {
		t.Fatalf("read after ClipFront: %q", b)
	}
	r.Skip(2)
	r.ClipFront(nil) // everything read
	if s.Len() != 0 || s.Count() != 0 || r.Remaining() != 0 {
		t.Fatalf("after clipping everything: Len %d Count %d", s.Len(), s.Count())
	}
	s.PushOne([]byte("z"))
	if c, err := r.ReadByte(); c != 'z' || err != nil {
		t.Fatalf("read after a push to a clipped Slice: %c %v", c, err)
	}
	r.ClipFront(nil)
	r2 := s.NewReader()
	r2.ClipFront(nil) // nothing read: nothing clipped
	if s.Len() != 0 {
		t.Fatalf("Len %d", s.Len())
	}
}

func TestReader_ClipFrontKeepsAPartlyReadOwnedSegmentForFree(t *testing.T) {
	var s buffer.Slice
	owned := bytepool.Get(64)
	copy(owned, "0123456789")
	s.PushOwned(owned[:10])
	r := s.NewReader()
	r.Skip(4)
	r.ClipFront(nil)
	if string(s.ToBytes()) != "456789" {
		t.Fatalf("after ClipFront: %q", s.ToBytes())
	}
	before := readStats(bytepool.Default())
	s.Free()
	after := readStats(bytepool.Default())
	if after.BadFrees != before.BadFrees {
		t.Fatalf("Free of a clipped owned segment: %d bad frees", after.BadFrees-before.BadFrees)
	}
	checkPutAgainPanics(t, owned) // it is idle in the pool
}

func TestReader_CallsAllocateNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(i) & 0x7f
	}
	segs := make([][]byte, 0, 4)
	for i := 0; i < len(data); i += 1024 {
		segs = append(segs, data[i:i+1024])
	}
	scratch := make([]byte, 64)
	p := make([]byte, 32)
	// The Slice and its Reader are built inside the measured function, as
	// a user builds them: a call that makes the Slice escape shows here
	// (issue 16).
	n := testing.AllocsPerRun(100, func() {
		s := buffer.NewSlice(segs...)
		r := s.NewReader()
		for r.Remaining() > 64 {
			r.ReadByte()
			r.Uint16BE()
			r.Uint24LE()
			r.Uint32BE()
			r.Uint64LE()
			r.Uvarint()
			r.Varint()
			r.LEB128()
			r.ReadBytesScratch(20, scratch)
			r.PeekScratch(20, scratch)
			r.Skip(3)
			r.Read(p)
			r.Unread(2)
			r.RangeN(5, func([]byte) bool { return true })
		}
		r.WriteTo(io.Discard)
		all := s.NewReader()
		all.Range(func([]byte) bool { return true })
	})
	if n != 0 {
		t.Fatalf("%v allocs", n)
	}
}
