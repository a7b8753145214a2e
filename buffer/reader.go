package buffer

import (
	"encoding/binary"
	"io"
	"math/bits"
)

// Reader reads a [Slice] from front to back as one stream of bytes, without
// copying where it can and without allocating: gomem's MemoryReader,
// whose every call allocated.
//
// It implements io.Reader, io.ByteReader, io.ByteScanner and io.WriterTo,
// and adds the calls a parser of a binary stream makes: [Reader.ReadBytes]
// and [Reader.Peek] (views into the segment when they fit in one),
// [Reader.Skip], [Reader.Unread], fixed-size integers in both byte orders,
// varints and LEB128, and [Reader.Range] and [Reader.RangeN] over the
// segments themselves.
//
// Reading past the end never panics: a call that needs more bytes than
// remain returns io.EOF if none remain, else io.ErrUnexpectedEOF, and
// leaves the position unchanged (io.Reader's Read, which returns what there
// is, excepted).
//
// A Reader is a 56-byte value: create it with [Slice.NewReader] and call
// its methods on an addressable variable; it stays on the stack and holds
// no memory of its own. The zero value
// is not usable. It is not safe for concurrent use, and neither is its
// Slice; several Readers may read one Slice, but [Reader.ClipFront]
// changes the Slice under the others. A copy of a Reader is an independent
// position in the same Slice (a cheap bookmark).
//
// Calls that stay within the current segment cost a bounds check and an
// index update, as bytes.Reader's do: ReadByte and Skip are inlined into
// their caller, the integer readers are single loads, and LEB128 decodes
// without a branch per byte. Crossing to the next segment costs a call.
type Reader struct {
	s     *Slice
	seg   []byte // the current segment, whole
	pos   int    // the bytes of seg read
	idx   int    // the index of seg in the Slice; -1 before the first
	start int    // the offset of seg from the start of the Slice
}

// Offset returns the number of bytes read from the start of the Slice
// (since the last [Reader.ClipFront]).
func (r *Reader) Offset() int { return r.start + r.pos }

// Remaining returns the number of bytes left to read.
func (r *Reader) Remaining() int { return r.s.n - r.start - r.pos }

// next moves to the start of the next non-empty segment and reports
// whether there is one. At the end it reports false, having moved past
// empty segments only, which changes no offset.
func (r *Reader) next() bool {
	segs := r.s.segs
	for r.idx+1 < len(segs) {
		r.idx++
		r.start += len(r.seg)
		r.seg = segs[r.idx]
		r.pos = 0
		if len(r.seg) > 0 {
			return true
		}
	}
	return false
}

// short returns the error for a read of more bytes than remain.
func (r *Reader) short() error {
	if r.Remaining() == 0 {
		return io.EOF
	}
	return io.ErrUnexpectedEOF
}

// ReadByte reads one byte, or returns io.EOF at the end.
func (r *Reader) ReadByte() (byte, error) {
	// The move to the next segment is written out rather than called, so
	// that ReadByte stays within the inlining budget.
	for r.pos >= len(r.seg) {
		if r.idx+1 >= len(r.s.segs) {
			return 0, io.EOF
		}
		r.idx++
		r.start += len(r.seg)
		r.seg = r.s.segs[r.idx]
		r.pos = 0
	}
	c := r.seg[r.pos]
	r.pos++
	return c, nil
}

// UnreadByte steps back one byte; at the start it returns [ErrUnread].
func (r *Reader) UnreadByte() error { return r.Unread(1) }

// Unread steps back n bytes, to read them again. It returns [ErrUnread],
// leaving the position unchanged, if fewer than n bytes were read. It
// panics with "memkit/buffer: negative read count" if n < 0.
func (r *Reader) Unread(n int) error {
	if n < 0 {
		panic(msgNegativeCnt)
	}
	if n > r.Offset() {
		return ErrUnread
	}
	for n > r.pos {
		n -= r.pos
		r.idx--
		r.seg = r.s.segs[r.idx]
		r.start -= len(r.seg)
		r.pos = len(r.seg)
	}
	r.pos -= n
	return nil
}

// Read reads up to len(p) bytes into p, copying across segments, and
// returns how many it read; at the end it returns 0, io.EOF (even for an
// empty p, as bytes.Reader).
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) <= len(r.seg)-r.pos && r.pos < len(r.seg) {
		n := copy(p, r.seg[r.pos:])
		r.pos += n
		return n, nil
	}
	if r.Remaining() == 0 {
		return 0, io.EOF
	}
	return r.copyOut(p), nil
}

// copyOut copies min(len(p), Remaining) bytes into p, advancing.
func (r *Reader) copyOut(p []byte) int {
	n := 0
	for n < len(p) {
		if r.pos == len(r.seg) && !r.next() {
			break
		}
		k := copy(p[n:], r.seg[r.pos:])
		r.pos += k
		n += k
	}
	return n
}

// readFull fills p or, if fewer bytes remain, returns the error and leaves
// the position unchanged.
func (r *Reader) readFull(p []byte) error {
	if len(p) > r.Remaining() {
		return r.short()
	}
	r.copyOut(p)
	return nil
}

// Skip advances n bytes. If fewer remain, it returns io.EOF or
// io.ErrUnexpectedEOF and does not move. It panics with
// "memkit/buffer: negative read count" if n < 0.
func (r *Reader) Skip(n int) error {
	if uint(n) <= uint(len(r.seg)-r.pos) { // n < 0 fails here too
		r.pos += n
		return nil
	}
	return r.skipSlow(n)
}

//go:noinline
func (r *Reader) skipSlow(n int) error {
	if n < 0 {
		panic(msgNegativeCnt)
	}
	if n > r.Remaining() {
		return r.short()
	}
	for n > len(r.seg)-r.pos {
		n -= len(r.seg) - r.pos
		r.pos = len(r.seg)
		r.next()
	}
	r.pos += n
	return nil
}

// ReadBytes reads the next n bytes. When they lie in one segment the
// result is a view of it, valid as long as the segment (and not to be
// written); when they span segments ReadBytes copies them into a new slice,
// which the caller owns: the one case where a Reader allocates. Use
// [Reader.ReadBytesScratch] to avoid it. If fewer than n bytes remain, it
// returns io.EOF or io.ErrUnexpectedEOF and does not move. It panics with
// "memkit/buffer: negative read count" if n < 0.
func (r *Reader) ReadBytes(n int) ([]byte, error) {
	if uint(n) <= uint(len(r.seg)-r.pos) {
		p := r.pos
		r.pos += n
		return r.seg[p : p+n : p+n], nil
	}
	return r.readBytesSlow(n, nil, true)
}

// ReadBytesScratch is [Reader.ReadBytes] that copies spanning bytes into
// scratch (from its start, growing it only if it is shorter than n): the
// result is a view of the segment or of scratch, and nothing is allocated
// when cap(scratch) >= n.
func (r *Reader) ReadBytesScratch(n int, scratch []byte) ([]byte, error) {
	if uint(n) <= uint(len(r.seg)-r.pos) {
		p := r.pos
		r.pos += n
		return r.seg[p : p+n : p+n], nil
	}
	return r.readBytesSlow(n, scratch, true)
}

// Peek returns the next n bytes without moving, as [Reader.ReadBytes]
// returns them: a view within one segment, a new slice across segments.
func (r *Reader) Peek(n int) ([]byte, error) {
	if uint(n) <= uint(len(r.seg)-r.pos) {
		return r.seg[r.pos : r.pos+n : r.pos+n], nil
	}
	return r.readBytesSlow(n, nil, false)
}

// PeekScratch is [Reader.Peek] with a scratch buffer, as
// [Reader.ReadBytesScratch].
func (r *Reader) PeekScratch(n int, scratch []byte) ([]byte, error) {
	if uint(n) <= uint(len(r.seg)-r.pos) {
		return r.seg[r.pos : r.pos+n : r.pos+n], nil
	}
	return r.readBytesSlow(n, scratch, false)
}

// readBytesSlow reads n bytes that span segments into scratch (or a new
// slice), moving if advance.
//
//go:noinline
func (r *Reader) readBytesSlow(n int, scratch []byte, advance bool) ([]byte, error) {
	if n < 0 {
		panic(msgNegativeCnt)
	}
	if n > r.Remaining() {
		return nil, r.short()
	}
	if cap(scratch) < n {
		scratch = make([]byte, n)
	}
	p := scratch[:n]
	if advance {
		r.copyOut(p)
	} else {
		c := *r
		c.copyOut(p)
	}
	return p, nil
}

// Uint16BE reads a big-endian uint16.
func (r *Reader) Uint16BE() (uint16, error) {
	if len(r.seg)-r.pos >= 2 {
		v := binary.BigEndian.Uint16(r.seg[r.pos:])
		r.pos += 2
		return v, nil
	}
	v, err := r.uintSlow(2, false)
	return uint16(v), err
}

// Uint16LE reads a little-endian uint16.
func (r *Reader) Uint16LE() (uint16, error) {
	if len(r.seg)-r.pos >= 2 {
		v := binary.LittleEndian.Uint16(r.seg[r.pos:])
		r.pos += 2
		return v, nil
	}
	v, err := r.uintSlow(2, true)
	return uint16(v), err
}

// Uint24BE reads a big-endian 24-bit unsigned integer.
func (r *Reader) Uint24BE() (uint32, error) {
	if len(r.seg)-r.pos >= 3 {
		c := r.seg[r.pos : r.pos+3]
		r.pos += 3
		return uint32(c[0])<<16 | uint32(c[1])<<8 | uint32(c[2]), nil
	}
	v, err := r.uintSlow(3, false)
	return uint32(v), err
}

// Uint24LE reads a little-endian 24-bit unsigned integer.
func (r *Reader) Uint24LE() (uint32, error) {
	if len(r.seg)-r.pos >= 3 {
		c := r.seg[r.pos : r.pos+3]
		r.pos += 3
		return uint32(c[0]) | uint32(c[1])<<8 | uint32(c[2])<<16, nil
	}
	v, err := r.uintSlow(3, true)
	return uint32(v), err
}

// Uint32BE reads a big-endian uint32.
func (r *Reader) Uint32BE() (uint32, error) {
	if len(r.seg)-r.pos >= 4 {
		v := binary.BigEndian.Uint32(r.seg[r.pos:])
		r.pos += 4
		return v, nil
	}
	v, err := r.uintSlow(4, false)
	return uint32(v), err
}

// Uint32LE reads a little-endian uint32.
func (r *Reader) Uint32LE() (uint32, error) {
	if len(r.seg)-r.pos >= 4 {
		v := binary.LittleEndian.Uint32(r.seg[r.pos:])
		r.pos += 4
		return v, nil
	}
	v, err := r.uintSlow(4, true)
	return uint32(v), err
}

// Uint64BE reads a big-endian uint64.
func (r *Reader) Uint64BE() (uint64, error) {
	if len(r.seg)-r.pos >= 8 {
		v := binary.BigEndian.Uint64(r.seg[r.pos:])
		r.pos += 8
		return v, nil
	}
	return r.uintSlow(8, false)
}

// Uint64LE reads a little-endian uint64.
func (r *Reader) Uint64LE() (uint64, error) {
	if len(r.seg)-r.pos >= 8 {
		v := binary.LittleEndian.Uint64(r.seg[r.pos:])
		r.pos += 8
		return v, nil
	}
	return r.uintSlow(8, true)
}

// uintSlow reads an n-byte integer, n <= 8, that spans segments, in the
// given byte order; if fewer than n bytes remain it returns the error and
// does not move.
//
//go:noinline
func (r *Reader) uintSlow(n int, little bool) (uint64, error) {
	var a [8]byte
	if err := r.readFull(a[:n]); err != nil {
		return 0, err
	}
	var v uint64
	for i := range n {
		if little {
			v |= uint64(a[i]) << (8 * i)
		} else {
			v = v<<8 | uint64(a[i])
		}
	}
	return v, nil
}

// UintBE reads an n-byte big-endian unsigned integer, 1 <= n <= 8 (gomem's
// ReadBE). It panics with "memkit/buffer: negative read count" if n < 0
// and returns 0, nil for n == 0; n > 8 keeps the low 64 bits.
func (r *Reader) UintBE(n int) (uint64, error) {
	if n < 0 {
		panic(msgNegativeCnt)
	}
	if n > r.Remaining() {
		return 0, r.short()
	}
	var v uint64
	for range n {
		c, _ := r.ReadByte()
		v = v<<8 | uint64(c)
	}
	return v, nil
}

// Uvarint reads an unsigned varint as encoding/binary writes it (LEB128,
// at most 10 bytes) and binary.ReadUvarint reads it. A varint past 64 bits
// (ten bytes without an end, or a tenth byte above 1) returns
// [ErrOverflow]; one cut short, io.EOF or io.ErrUnexpectedEOF; either way
// the position is unchanged.
func (r *Reader) Uvarint() (uint64, error) {
	if cur := r.seg[r.pos:]; len(cur) >= binary.MaxVarintLen64 || len(cur) > 0 && cur[len(cur)-1] < 0x80 {
		v, n := binary.Uvarint(cur)
		if n > 0 {
			r.pos += n
			return v, nil
		}
		if n < 0 {
			return 0, ErrOverflow
		}
	}
	return r.uvarintSlow()
}

// uvarintSlow reads a varint that may span segments, byte by byte, and
// steps back over what it read if the varint is cut short or overflows.
// It moves r itself rather than a copy written back: a copy stored through
// r would make r's Slice escape to the heap.
func (r *Reader) uvarintSlow() (uint64, error) {
	var v uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := r.ReadByte()
		if err != nil {
			r.Unread(i)
			if i == 0 {
				return 0, io.EOF
			}
			return 0, io.ErrUnexpectedEOF
		}
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				r.Unread(i + 1)
				return 0, ErrOverflow
			}
			return v | uint64(b)<<(7*i), nil
		}
		v |= uint64(b&0x7f) << (7 * i)
	}
	r.Unread(binary.MaxVarintLen64)
	return 0, ErrOverflow
}

// Varint reads a signed (zig-zag) varint as encoding/binary writes it;
// errors as [Reader.Uvarint].
func (r *Reader) Varint() (int64, error) {
	u, err := r.Uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v, err
}

// LEB128 reads an unsigned LEB128 number as AV1 codes sizes (and gomem's
// LEB128Unmarshal reads them): at most 8 bytes, the 8th ending the number
// whatever its high bit. It returns the value and the bytes read. A number
// cut short returns io.EOF or io.ErrUnexpectedEOF, with the position
// unchanged.
func (r *Reader) LEB128() (v uint64, n int, err error) {
	if len(r.seg)-r.pos >= 8 {
		// Branch-free: find the first byte without the high bit (or
		// stop at 8), keep the bytes up to it, and pack their 7-bit
		// groups together in three steps.
		x := binary.LittleEndian.Uint64(r.seg[r.pos:])
		n = min(bits.TrailingZeros64(^x&0x8080808080808080)>>3+1, 8)
		x &= ^uint64(0) >> (64 - 8*n)
		x = x&0x007f007f007f007f | x>>1&0x3f803f803f803f80
		x = x&0x00003fff00003fff | x>>2&0x0fffc0000fffc000
		x = x&0x000000000fffffff | x>>4&0x00fffffff0000000
		r.pos += n
		return x, n, nil
	}
	return r.leb128Slow()
}

// leb128Slow is LEB128 across segments, moving r itself as uvarintSlow
// does.
func (r *Reader) leb128Slow() (uint64, int, error) {
	var v uint64
	for i := 0; i < 8; i++ {
		b, err := r.ReadByte()
		if err != nil {
			r.Unread(i)
			if i == 0 {
				return 0, 0, io.EOF
			}
			return 0, 0, io.ErrUnexpectedEOF
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, i + 1, nil
		}
	}
	return v, 8, nil
}

// piece returns bytes i to j of the current segment, with the capacity cut
// at j, for a function the Reader does not know (Range's f, a Writer).
// It takes them from the Slice's list of segments, not from r.seg: escape
// analysis does not tell one field of *r from another, so a view loaded
// from r.seg that leaks to the heap would take the Slice r.s points to
// with it (one allocation per NewReader, issue 16).
func (r *Reader) piece(i, j int) []byte { return r.s.segs[r.idx][i:j:j] }

// Range calls f with the unread bytes, a segment (the current one from the
// position) at a time, consuming each piece as it is passed, until f
// returns false or nothing remains. The pieces are views of the segments.
func (r *Reader) Range(f func([]byte) bool) {
	for {
		if r.pos == len(r.seg) && !r.next() {
			return
		}
		p := r.piece(r.pos, len(r.seg))
		r.pos = len(r.seg)
		if !f(p) {
			return
		}
	}
}

// RangeN is [Reader.Range] over the next n bytes only: the last piece is cut
// at n. If fewer than n bytes remain it calls nothing, returns io.EOF or
// io.ErrUnexpectedEOF and does not move. It panics with
// "memkit/buffer: negative read count" if n < 0.
func (r *Reader) RangeN(n int, f func([]byte) bool) error {
	if n < 0 {
		panic(msgNegativeCnt)
	}
	if n > r.Remaining() {
		return r.short()
	}
	for n > 0 {
		if r.pos == len(r.seg) {
			r.next()
		}
		k := min(n, len(r.seg)-r.pos)
		p := r.piece(r.pos, r.pos+k)
		r.pos += k
		n -= k
		if !f(p) {
			break
		}
	}
	return nil
}

// WriteTo writes the unread bytes to w, consuming what w accepts, as
// [Slice.WriteTo] does (writev for a net.Conn).
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	var cur []byte
	if r.idx >= 0 {
		cur = r.piece(r.pos, len(r.seg))
	}
	var rest [][]byte
	if r.idx+1 < len(r.s.segs) {
		rest = r.s.segs[r.idx+1:]
	}
	n, err := writeSegs(w, cur, rest)
	r.Skip(int(n)) // past what was written, from the position
	return n, err
}

// ClipFront removes what has been read from the Slice: segments read to
// the end leave it — owned ones go back to bytepool, and f, if not nil,
// is called with each of the others, so that their owner can recycle
// them — and the segment being read loses its read part. Offset is 0
// afterwards. Other Readers of the Slice must not be used after it.
func (r *Reader) ClipFront(f func([]byte)) {
	s := r.s
	partial := r.idx >= 0 && r.pos < len(r.seg)
	k := r.idx + 1 // segments before k are read to the end
	if partial {
		k = r.idx
	}
	for i := 0; i < k; i++ {
		if s.own != nil && s.own[i] != nil {
			s.putOwned(s.own[i : i+1])
		} else if f != nil {
			f(s.segs[i])
		}
	}
	if partial {
		s.segs[r.idx] = r.seg[r.pos:] // its owned buffer, if any, stays in own
	}
	s.n -= r.Offset()
	clear(s.segs[:k])
	s.segs = s.segs[k:]
	if s.own != nil {
		clear(s.own[:k])
		s.own = s.own[k:]
	}
	r.idx, r.pos, r.start, r.seg = -1, 0, 0, nil
	if partial {
		r.idx, r.seg = 0, s.segs[0]
	}
}
