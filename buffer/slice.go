package buffer

import (
	"bytes"
	"io"
	"iter"
	"net"
	"sync"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
)

// Slice is an ordered list of byte segments read as one stream of bytes:
// gomem's Memory, grpc's mem.BufferSlice, net.Buffers. Segments are
// referenced, never copied, when pushed; a [Reader] reads across them
// without copying.
//
// A Slice may own some of its segments: those pushed with
// [Slice.PushOwned] came from bytepool, and [Slice.Free] (or
// [Slice.Reset], or [Reader.ClipFront] once they are read) puts them back.
// The others belong to whoever pushed them.
//
// A Slice is not safe for concurrent use; give each goroutine its own. The
// zero value is an empty Slice ready to use. A Slice may be copied before
// it owns a segment; after that, only one copy may Free it. Push is an
// append to the list of segments (amortized O(1), a 24-byte header per
// segment, 48 with ownership); Len and Count are O(1). The Slice allocates
// only that list; the bytes stay where they are, on or off the heap.
type Slice struct {
	segs [][]byte
	own  [][]byte // nil, or per segment: the bytepool buffer behind it, or nil
	n    int
}

// NewSlice returns a Slice of the given segments, which it references (the
// list too, until a Push grows it).
func NewSlice(segs ...[]byte) Slice {
	s := Slice{segs: segs[:len(segs):len(segs)]}
	for _, b := range segs {
		s.n += len(b)
	}
	return s
}

// PushOne appends the segment b. The Slice references b: b must not change
// while the Slice is read.
func (s *Slice) PushOne(b []byte) {
	s.segs = append(s.segs, b)
	if s.own != nil {
		s.own = append(s.own, nil)
	}
	s.n += len(b)
}

// Push appends the segments bs, as PushOne does each.
func (s *Slice) Push(bs ...[]byte) {
	s.segs = append(s.segs, bs...)
	if s.own != nil {
		for range bs {
			s.own = append(s.own, nil)
		}
	}
	for _, b := range bs {
		s.n += len(b)
	}
}

// PushOwned appends b, a buffer from bytepool.Get (the default bytepool,
// bytepool.Default), with the start and capacity Get gave it; its length
// may be shorter. The Slice owns b from then on: [Slice.Free] puts it back.
// The checked build panics at once if b is not such a buffer (see the
// package's "Checked build"); the release build finds out, as bytepool's
// Put does, when the Slice gives it back.
func (s *Slice) PushOwned(b []byte) {
	if checked.Enabled {
		checkOwned(b)
	}
	if s.own == nil {
		s.own = make([][]byte, len(s.segs), cap(s.segs))
	}
	s.segs = append(s.segs, b)
	s.own = append(s.own, b)
	s.n += len(b)
}

// Append appends the segments of o, without their ownership: o still owns,
// and frees, those it owns, so s must not be read after o frees them.
func (s *Slice) Append(o Slice) { s.Push(o.segs...) }

// Count returns the number of segments.
func (s *Slice) Count() int { return len(s.segs) }

// Len returns the number of bytes in all segments.
func (s *Slice) Len() int { return s.n }

// Segment returns segment i.
func (s *Slice) Segment(i int) []byte { return s.segs[i] }

// Range calls f with each segment in order until f returns false.
// Empty segments are passed too.
func (s *Slice) Range(f func([]byte) bool) {
	for _, b := range s.segs {
		if !f(b) {
			return
		}
	}
}

// Segments returns an iterator over the segments, in order.
func (s *Slice) Segments() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) { s.Range(yield) }
}

// ToBytes returns the bytes of all segments in one new slice: it allocates
// Len bytes (one segment's bytes are copied too, never aliased).
func (s *Slice) ToBytes() []byte {
	out := make([]byte, s.n)
	s.CopyTo(out)
	return out
}

// CopyTo copies the bytes of the segments into dst, up to len(dst), and
// returns the number copied.
func (s *Slice) CopyTo(dst []byte) int {
	n := 0
	for _, b := range s.segs {
		if n == len(dst) {
			break
		}
		n += copy(dst[n:], b)
	}
	return n
}

// WriteTo writes the segments to w in order and returns the bytes written.
// If w is a net.Conn, the segments go out through net.Buffers, which uses
// writev on TCP and Unix connections: one system call for many segments.
// Other writers get one Write per non-empty segment. The Slice is not
// consumed (read it with a [Reader] to consume it).
func (s *Slice) WriteTo(w io.Writer) (int64, error) {
	return writeSegs(w, nil, s.segs)
}

// writeSegs writes first, then rest, to w.
func writeSegs(w io.Writer, first []byte, rest [][]byte) (int64, error) {
	if _, ok := w.(net.Conn); ok && len(rest) > 0 {
		sp := netBufs.Get().(*net.Buffers)
		v := (*sp)[:0]
		if len(first) > 0 {
			v = append(v, first)
		}
		v = append(v, rest...)
		*sp = v
		n, err := sp.WriteTo(w) // consumes *sp, not v's elements' bytes
		clear(v)
		*sp = v[:0]
		netBufs.Put(sp)
		return n, err
	}
	var total int64
	if len(first) > 0 {
		n, err := w.Write(first)
		total += int64(n)
		if err == nil && n < len(first) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return total, err
		}
	}
	for _, b := range rest {
		if len(b) == 0 {
			continue
		}
		n, err := w.Write(b)
		total += int64(n)
		if err == nil && n < len(b) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// netBufs recycles the segment lists handed to net.Buffers, which writes
// through them (it slices the segments it has sent).
var netBufs = sync.Pool{New: func() any { return new(net.Buffers) }}

// Equal reports whether s and o hold the same bytes, however they are cut
// into segments. It does not allocate.
func (s *Slice) Equal(o *Slice) bool {
	if s.n != o.n {
		return false
	}
	var a, b []byte
	i, k := 0, 0
	for {
		for len(a) == 0 && i < len(s.segs) {
			a = s.segs[i]
			i++
		}
		for len(b) == 0 && k < len(o.segs) {
			b = o.segs[k]
			k++
		}
		if len(a) == 0 || len(b) == 0 {
			return len(a) == len(b)
		}
		m := min(len(a), len(b))
		if !bytes.Equal(a[:m], b[:m]) {
			return false
		}
		a, b = a[m:], b[m:]
	}
}

// Reset empties the Slice, keeping its list of segments for reuse. Owned
// segments go back to bytepool first.
func (s *Slice) Reset() {
	s.putOwned(s.own)
	clear(s.segs)
	s.segs = s.segs[:0]
	if s.own != nil {
		s.own = s.own[:0]
	}
	s.n = 0
}

// Free empties the Slice and drops its list of segments: owned segments go
// back to bytepool. The Slice stays usable, as a zero Slice.
func (s *Slice) Free() {
	s.putOwned(s.own)
	*s = Slice{}
}

// putOwned puts the owned buffers of own back to bytepool and forgets them.
func (s *Slice) putOwned(own [][]byte) {
	for i, b := range own {
		if b != nil {
			bytepool.Put(b)
			own[i] = nil
		}
	}
}

// NewReader returns a Reader at the start of s. The Reader refers to s, so
// s must outlive it; segments pushed to s later are read too.
func (s *Slice) NewReader() Reader {
	r := Reader{s: s, idx: -1}
	r.next()
	return r
}
