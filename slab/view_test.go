package slab_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/slab"
)

// record is a pointer-free fixed-layout record.
type record struct {
	ID    uint64
	Score float64
	Name  [24]byte
	Tags  [4]uint16
	Inner struct{ A, B int32 }
}

type Person2 struct {
	Name    string
	Surname string
	Age     int
}

type withIface struct {
	A [2]int
	E error
}

// Which types hold pointers, and how the first one is named, is
// internal/ptrfree's, tested there: here, that View and ViewSlice use it
// and speak as slab.
func TestView_RefusesPointerfulTypes(t *testing.T) {
	buf := make([]byte, 256)
	const tail = ": Go pointers cannot live in slab memory"
	memtest.CheckPanic(t, "memkit/slab: Person2.Name is a string"+tail, func() { slab.View[Person2](buf) })
	memtest.CheckPanic(t, "memkit/slab: withIface.E is an interface"+tail, func() { slab.ViewSlice[withIface](buf, 1) })
}

func TestView_ChecksSizeAndAlignment(t *testing.T) {
	a := mustArena(t, 8, 4096, 2)
	buf := a.Alloc(64)
	r := slab.View[record](buf)
	r.ID, r.Score = 7, 2.5
	slab.SetString(r.Name[:], "John")
	if got := slab.View[record](buf); got.ID != 7 || got.Score != 2.5 || slab.GetString(got.Name[:]) != "John" {
		t.Fatalf("read back %+v", got)
	}
	memtest.CheckPanic(t, "memkit/slab: View[record] needs 56 bytes, buffer has 55", func() { slab.View[record](buf[8:63]) })
	memtest.CheckPanic(t, fmt.Sprintf("memkit/slab: View[record] needs %d-byte alignment", unsafe.Alignof(record{})),
		func() { slab.View[record](buf[1:]) })
	memtest.CheckPanic(t, "memkit/slab: ViewSlice[uint32] of 3 needs 12 bytes, buffer has 11", func() { slab.ViewSlice[uint32](buf[:11], 3) })
	memtest.CheckPanic(t, "memkit/slab: ViewSlice[uint32] needs 4-byte alignment", func() { slab.ViewSlice[uint32](buf[2:], 1) })
	memtest.CheckPanic(t, "memkit/slab: negative size", func() { slab.ViewSlice[uint32](buf, -1) })
	huge, need := 1<<(strconv.IntSize-2), "2^64 or more" // a product that overflows 64 bits
	if strconv.IntSize == 32 {
		need = "4294967296"
	}
	memtest.CheckPanic(t, fmt.Sprintf("memkit/slab: ViewSlice[uint32] of %d needs %s bytes, buffer has 64", huge, need),
		func() { slab.ViewSlice[uint32](buf[:64], huge) })
	memtest.CheckPanic(t, "memkit/slab: ViewSlice[uint32] of 1073741824 needs 4294967296 bytes, buffer has 64",
		func() { slab.ViewSlice[uint32](buf[:64], 1<<30) })
	xs := slab.ViewSlice[uint32](buf, 16)
	if len(xs) != 16 || unsafe.Pointer(&xs[0]) != unsafe.Pointer(&buf[0]) {
		t.Fatalf("ViewSlice: len %d, aliases buf %v", len(xs), unsafe.Pointer(&xs[0]) == unsafe.Pointer(&buf[0]))
	}
	if got := slab.ViewSlice[uint32](nil, 0); got == nil || len(got) != 0 {
		t.Fatal("ViewSlice(nil, 0) is not an empty slice")
	}
	a.DecRef(buf)
}

func TestView_CheckedOncePerType(t *testing.T) {
	buf := make([]byte, 64)
	slab.View[record](buf) // fills the cache
	if n := testing.AllocsPerRun(100, func() { slab.View[record](buf) }); n != 0 {
		t.Fatalf("a cached View allocates %v times", n)
	}
}

func TestSetString(t *testing.T) {
	var f [8]byte
	for i := range f {
		f[i] = 'x'
	}
	if !slab.SetString(f[:], "Doe") || f != [8]byte{'D', 'o', 'e'} || slab.GetString(f[:]) != "Doe" {
		t.Fatalf("SetString(Doe) = %q", f)
	}
	if !slab.SetString(f[:], "12345678") || slab.GetString(f[:]) != "12345678" {
		t.Fatalf("a string filling the field = %q", f)
	}
	before := f
	if slab.SetString(f[:], "123456789") || slab.SetString(f[:], "a\x00b") || f != before {
		t.Fatal("SetString truncated or changed the field instead of refusing")
	}
	if !slab.SetString(f[:], "") || slab.GetString(f[:]) != "" || string(slab.GetBytes(f[:])) != "" {
		t.Fatal("empty string")
	}
}

// TestView_SurvivesGC writes records through views into slab memory, runs
// the GC (which neither scans nor moves slab memory), and reads them back.
func TestView_SurvivesGC(t *testing.T) {
	a := mustArena(t, 64, 64<<10, 2)
	var locs []slab.Loc
	for i := range 1000 {
		buf := a.Alloc(int(unsafe.Sizeof(record{})))
		r := slab.View[record](buf)
		r.ID, r.Score = uint64(i), float64(i)/2
		slab.SetString(r.Name[:], fmt.Sprintf("rec-%d", i))
		locs = append(locs, a.BufToLoc(buf))
	}
	runtime.GC()
	runtime.GC()
	for i, l := range locs {
		r := slab.View[record](a.LocToBuf(l))
		if r.ID != uint64(i) || r.Score != float64(i)/2 || slab.GetString(r.Name[:]) != fmt.Sprintf("rec-%d", i) {
			t.Fatalf("record %d changed across GC: %+v", i, r)
		}
		a.LocDecRef(l)
	}
}
