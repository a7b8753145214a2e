package gomem_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/memkit/memkit/compat/gomem"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// TestGomemProgram_Frames is a Monibuca-style use: frames built from pieces
// of a RecyclableMemory, written out, recycled, with every byte checked.
func TestGomemProgram_Frames(t *testing.T) {
	allocator := gomem.NewScalableMemoryAllocator(1 << 16)
	for frame := 0; frame < 200; frame++ {
		rm := gomem.NewRecyclableMemory(allocator)
		var want []byte
		for piece := 0; piece < 1+frame%7; piece++ {
			size := 100 + (frame*37+piece*911)%5000
			b := rm.NextN(size)
			for i := range b {
				b[i] = byte(frame + piece + i)
			}
			want = append(want, b...)
		}
		var out bytes.Buffer
		if _, err := rm.WriteTo(&out); err != nil || !bytes.Equal(out.Bytes(), want) || rm.Size != len(want) {
			t.Fatalf("frame %d: wrote %d bytes, want %d (err %v)", frame, out.Len(), len(want), err)
		}
		rm.Recycle()
		if rm.Size != 0 || rm.Count() != 0 {
			t.Fatalf("Recycle left %d bytes", rm.Size)
		}
	}
	if allocator.GetTotalMalloc() != allocator.GetTotalFree() {
		t.Fatalf("malloc %d != free %d", allocator.GetTotalMalloc(), allocator.GetTotalFree())
	}
}

func TestAllocator_FreeForeignReturnsFalse(t *testing.T) {
	a := gomem.NewScalableMemoryAllocator(1024)
	if a.Free(make([]byte, 16)) {
		t.Fatal("Free of heap memory reported true")
	}
	big := a.Malloc(gomem.MaxBlockSize + 1)
	if len(big) != gomem.MaxBlockSize+1 || a.Free(big) {
		t.Fatal("a request above MaxBlockSize was not a make'd buffer")
	}
}

func TestAllocator_FreeTwicePanics(t *testing.T) {
	a := gomem.NewScalableMemoryAllocator(1024)
	keep := a.Malloc(64)
	copy(keep, "intact")
	b := a.Malloc(64)
	if !a.Free(b) {
		t.Fatal("Free of own memory reported false")
	}
	memtest.WantMisuse(t, "extent", "memkit/extent: double free", "Free", checked.DoubleFree, func() { a.Free(b) })
	if string(keep[:6]) != "intact" {
		t.Fatal("a live allocation changed")
	}
}

func TestAllocator_FreeRestBorrowRead(t *testing.T) {
	a := gomem.NewScalableMemoryAllocator(4096)
	b := a.Malloc(1000)
	a.FreeRest(&b, 100)
	if len(b) != 100 || cap(b) != 100 || a.GetTotalFree() != 900 {
		t.Fatalf("FreeRest: len %d cap %d free %d", len(b), cap(b), a.GetTotalFree())
	}
	if s := a.Borrow(50); len(s) != 50 {
		t.Fatalf("Borrow(50) len %d", len(s))
	}
	got, err := a.Read(strings.NewReader("hello world"), 5)
	if err != nil || string(got) != "hello" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if _, err := a.Read(strings.NewReader("hi"), 5); err != io.ErrUnexpectedEOF {
		t.Fatalf("short Read = %v", err)
	}
	a.Recycle()
	c := a.Malloc(10) // usable after Recycle
	a.Free(c)
	a.Trim()
}

func TestMemory_Operations(t *testing.T) {
	m := gomem.NewMemory([]byte("ab"))
	m.Push([]byte("cd"), []byte("ef"))
	m.UpdateBuffer(-1, []byte("EFG"))
	if m.Size != 7 || string(m.ToBytes()) != "abcdEFG" {
		t.Fatalf("Size %d bytes %q", m.Size, m.ToBytes())
	}
	other := gomem.NewMemory([]byte("abcdEFG"))
	if !m.Equal(&other) {
		t.Fatal("Equal depends on segmentation")
	}
	var c gomem.Memory
	c.CopyFrom(&m)
	c.Append(gomem.NewMemory([]byte("!")))
	if string(c.ToBytes()) != "abcdEFG!" || c.Count() != 2 {
		t.Fatalf("CopyFrom+Append: %q in %d", c.ToBytes(), c.Count())
	}
	var seen []string
	m.Range(func(b []byte) { seen = append(seen, string(b)) })
	if strings.Join(seen, "|") != "ab|cd|EFG" {
		t.Fatalf("Range: %v", seen)
	}
	m.Reset()
	if m.Size != 0 || m.Count() != 0 {
		t.Fatal("Reset")
	}
}

func TestMemoryReader_Parsing(t *testing.T) {
	r := gomem.NewReadableBuffersFromBytes([]byte{0x01, 0x02}, []byte{0x03, 0x84, 0x01}, []byte("xyz"))
	var a, b byte
	if err := r.ReadByteTo(&a, &b); err != nil || a != 1 || b != 2 || r.Length != 6 || r.Offset() != 2 {
		t.Fatalf("ReadByteTo %d %d len %d", a, b, r.Length)
	}
	r.Unread(1)
	if v, err := r.ReadBE(2); err != nil || v != 0x0203 {
		t.Fatalf("ReadBE across buffers = %#x, %v", v, err)
	}
	if v, n, err := r.LEB128Unmarshal(); err != nil || v != 0x84&0x7f|1<<7 || n != 2 {
		t.Fatalf("LEB128 = %d, %d, %v", v, n, err)
	}
	if string(r.GetCurrent()) != "xyz" {
		t.Fatalf("GetCurrent %q", r.GetCurrent())
	}
	if m, err := r.ReadByteMask(0x0f); err != nil || m != 'x'&0x0f {
		t.Fatalf("ReadByteMask %v", m)
	}
	if err := r.Skip(5); !errors.Is(err, io.ErrUnexpectedEOF) || r.Length != 2 {
		t.Fatalf("Skip past the end = %v, Length %d", err, r.Length)
	}
	got, err := r.ReadBytes(2)
	if err != nil || string(got) != "yz" || r.Length != 0 {
		t.Fatalf("ReadBytes = %q, %v", got, err)
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("ReadByte at the end = %v", err)
	}
}

func TestMemoryReader_RangeAndClipFront(t *testing.T) {
	m := gomem.Memory{}
	m.Push([]byte("aaa"), []byte("bbb"), []byte("ccc"))
	r := m.NewReader()
	var pieces []string
	r.RangeN(4, func(b []byte) { pieces = append(pieces, string(b)) })
	if strings.Join(pieces, "|") != "aaa|b" || r.Length != 5 {
		t.Fatalf("RangeN: %v, Length %d", pieces, r.Length)
	}
	var clipped []string
	r.ClipFront(func(b []byte) bool { clipped = append(clipped, string(b)); return true })
	if strings.Join(clipped, "|") != "aaa" || m.Size != 5 || m.Count() != 2 || string(m.ToBytes()) != "bbccc" {
		t.Fatalf("ClipFront: %v; memory %q in %d", clipped, m.ToBytes(), m.Count())
	}
	pieces = pieces[:0]
	r.Range(func(b []byte) { pieces = append(pieces, string(b)) })
	if strings.Join(pieces, "|") != "bb|ccc" || r.Length != 0 {
		t.Fatalf("Range: %v", pieces)
	}
	r2 := m.NewReader()
	r2.Range(nil)
	if r2.Length != 0 {
		t.Fatal("Range(nil) did not move to the end")
	}
}

func TestMemoryReader_CopyIsAPosition(t *testing.T) {
	r := gomem.NewReadableBuffersFromBytes([]byte("ab"), []byte("cd"))
	r.ReadByte()
	c := r // a copy reads on from the same point
	x, _ := c.ReadByte()
	y, _ := r.ReadByte()
	if x != 'b' || y != 'b' {
		t.Fatalf("copy read %c, original %c", x, y)
	}
}

func TestHotPathsAllocateNothing(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build records stacks")
	}
	a := gomem.NewScalableMemoryAllocator(1 << 16)
	a.Free(a.Malloc(256))
	if n := testing.AllocsPerRun(1000, func() { a.Free(a.Malloc(256)) }); n != 0 {
		t.Fatalf("Malloc+Free: %v allocs", n)
	}
	a.Borrow(8192)
	if n := testing.AllocsPerRun(1000, func() { a.Borrow(8192)[0] = 1 }); n != 0 {
		t.Fatalf("Borrow: %v allocs", n)
	}
	m := gomem.NewMemory(make([]byte, 1<<16))
	r := m.NewReader()
	r.ReadByte()
	if n := testing.AllocsPerRun(1000, func() {
		r.ReadByte()
		r.Unread(1)
		r.Skip(3)
	}); n != 0 {
		t.Fatalf("MemoryReader: %v allocs", n)
	}
}
