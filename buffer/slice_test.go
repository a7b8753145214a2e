package buffer_test

import (
	"bytes"
	"io"
	"net"
	"slices"
	"testing"
	"unsafe"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/race"
)

func sameMemory(a, b []byte) bool {
	return len(a) > 0 && len(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

func TestSlice_PushCountLenAndRange(t *testing.T) {
	var s buffer.Slice
	s.PushOne([]byte("ab"))
	s.Push([]byte("cde"), nil, []byte("f"))
	if s.Count() != 4 || s.Len() != 6 || string(s.ToBytes()) != "abcdef" {
		t.Fatalf("Count %d Len %d %q", s.Count(), s.Len(), s.ToBytes())
	}
	var got []string
	s.Range(func(b []byte) bool {
		got = append(got, string(b))
		return len(got) < 2
	})
	if !slices.Equal(got, []string{"ab", "cde"}) {
		t.Fatalf("Range stopped wrong: %q", got)
	}
	got = got[:0]
	for b := range s.Segments() {
		got = append(got, string(b))
	}
	if !slices.Equal(got, []string{"ab", "cde", "", "f"}) || string(s.Segment(1)) != "cde" {
		t.Fatalf("Segments: %q", got)
	}
	dst := make([]byte, 4)
	if n := s.CopyTo(dst); n != 4 || string(dst) != "abcd" {
		t.Fatalf("CopyTo short dst = %d %q", n, dst)
	}
	seg := []byte("xyz")
	s2 := buffer.NewSlice(seg)
	if !sameMemory(s2.Segment(0), seg) {
		t.Fatal("NewSlice copied a segment")
	}
	s.Append(s2)
	if s.Len() != 9 || string(s.ToBytes()) != "abcdefxyz" || s2.Len() != 3 {
		t.Fatalf("Append: %q", s.ToBytes())
	}
	s.Reset()
	if s.Len() != 0 || s.Count() != 0 {
		t.Fatal("Reset")
	}
}

func TestSlice_NewSliceDoesNotWriteIntoTheCallersList(t *testing.T) {
	list := make([][]byte, 1, 4)
	list[0] = []byte("a")
	s := buffer.NewSlice(list...)
	s.PushOne([]byte("b"))
	if list[:2][1] != nil {
		t.Fatal("PushOne wrote into the list NewSlice was given")
	}
}

func TestSlice_EqualIgnoresSegmentation(t *testing.T) {
	a := buffer.NewSlice([]byte("hel"), []byte("lo, "), nil, []byte("world"))
	b := buffer.NewSlice([]byte("hello, wor"), []byte("ld"))
	c := buffer.NewSlice([]byte("hello, worle"))
	d := buffer.NewSlice([]byte("hello"))
	var e1, e2 buffer.Slice
	e2.PushOne(nil)
	for _, tc := range []struct {
		x, y *buffer.Slice
		want bool
	}{{&a, &b, true}, {&b, &a, true}, {&a, &c, false}, {&a, &d, false}, {&e1, &e2, true}, {&a, &a, true}} {
		if got := tc.x.Equal(tc.y); got != tc.want {
			t.Errorf("Equal(%q, %q) = %v", tc.x.ToBytes(), tc.y.ToBytes(), got)
		}
	}
}

func TestSlice_FreeReturnsOwnedSegmentsOnly(t *testing.T) {
	before := readStats(bytepool.Default())
	var s buffer.Slice
	s.PushOne([]byte("not owned"))
	a := bytepool.Get(100)
	copy(a, "owned")
	s.PushOwned(a[:5])
	b := bytepool.Get(3000)
	s.PushOwned(b)
	s.PushOne([]byte("x"))
	if s.Len() != 9+5+3000+1 || s.Count() != 4 {
		t.Fatalf("Len %d Count %d", s.Len(), s.Count())
	}
	s.Free()
	after := readStats(bytepool.Default())
	if after.BadFrees != before.BadFrees {
		t.Fatalf("Free put back %d bad buffers", after.BadFrees-before.BadFrees)
	}
	// Both owned buffers are idle in the pool: a second Put is a double free.
	checkPutAgainPanics(t, a)
	checkPutAgainPanics(t, b)
	if s.Len() != 0 || s.Count() != 0 {
		t.Fatal("Free did not empty the Slice")
	}
	s.PushOne([]byte("reusable"))
	if string(s.ToBytes()) != "reusable" {
		t.Fatal("a freed Slice is not reusable")
	}
}

func TestSlice_WriteToPlainWriter(t *testing.T) {
	s := buffer.NewSlice([]byte("ab"), nil, []byte("cd"))
	var out bytes.Buffer
	n, err := s.WriteTo(&out)
	if n != 4 || err != nil || out.String() != "abcd" || s.Len() != 4 {
		t.Fatalf("WriteTo = %d, %v, %q", n, err, out.String())
	}
	n, err = s.WriteTo(shortWriter{})
	if n != 1 || err != io.ErrShortWrite {
		t.Fatalf("WriteTo short writer = %d, %v", n, err)
	}
	if race.Enabled {
		return
	}
	if allocs := testing.AllocsPerRun(100, func() { s.WriteTo(io.Discard) }); allocs != 0 {
		t.Fatalf("WriteTo: %v allocs", allocs)
	}
}

// TestSlice_WriteToTCPUsesWritev sends a Slice over a loopback TCP
// connection, where net.Buffers writes it with writev, and checks the
// bytes and that the Slice's segments are intact afterwards.
func TestSlice_WriteToTCPUsesWritev(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback TCP:", err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	segs := [][]byte{[]byte("one,"), []byte("two,"), nil, bytes.Repeat([]byte("3"), 100000)}
	s := buffer.NewSlice(segs...)
	n, err := s.WriteTo(c)
	c.Close()
	if err != nil || n != int64(s.Len()) {
		t.Fatalf("WriteTo = %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, s.ToBytes()) {
		t.Fatalf("received %d bytes, want %d", len(b), s.Len())
	}
	if string(s.Segment(0)) != "one," || len(s.Segment(3)) != 100000 {
		t.Fatal("writev consumed the Slice's segments")
	}
	// A Reader's WriteTo consumes what was written.
	c2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Skip(err)
	}
	go func() {
		cc, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer cc.Close()
		b, _ := io.ReadAll(cc)
		got <- b
	}()
	r := s.NewReader()
	r.Skip(2)
	n, err = r.WriteTo(c2)
	c2.Close()
	if err != nil || n != int64(s.Len()-2) || r.Remaining() != 0 {
		t.Fatalf("Reader.WriteTo = %d, %v, %d left", n, err, r.Remaining())
	}
	if b := <-got; !bytes.Equal(b, s.ToBytes()[2:]) {
		t.Fatalf("received %d bytes, want %d", len(b), s.Len()-2)
	}
}

func TestSlice_PushAfterResetAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	var s buffer.Slice
	seg := []byte("segment")
	for range 16 {
		s.PushOne(seg)
	}
	if n := testing.AllocsPerRun(100, func() {
		s.Reset()
		for range 16 {
			s.PushOne(seg)
		}
		s.Equal(&s)
	}); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}
