package memtest

import (
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
)

func TestModel_OverlapsAndDrop(t *testing.T) {
	buf := make([]byte, 300)
	m := NewModel(1)
	for _, b := range [][]byte{buf[0:100:100], buf[100:200:200]} {
		if _, err := m.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	if !m.Overlaps(buf[150:160]) || !m.Overlaps(buf[99:101]) || m.Overlaps(buf[200:300]) {
		t.Fatal("Overlaps is wrong about the live blocks")
	}
	m.Drop(0)
	if len(m.Live) != 1 || Addr(m.Live[0].Buf) != Addr(buf[100:]) || m.Overlaps(buf[0:100:100]) {
		t.Fatalf("after Drop(0): %d live", len(m.Live))
	}
	if Addr(buf[5:5]) != uintptr(unsafe.Pointer(&buf[5])) {
		t.Fatal("Addr of an empty slice with capacity")
	}
}

func TestPanicValue(t *testing.T) {
	if v, ok := PanicValue(func() {}); ok || v != nil {
		t.Fatalf("no panic: %v, %v", v, ok)
	}
	if v, ok := PanicValue(func() { panic("x") }); !ok || v != "x" {
		t.Fatalf("panic x: %v, %v", v, ok)
	}
}

func TestIsPanicOfAndBadFreeOK(t *testing.T) {
	if !IsPanicOf("buddy", "memkit/buddy: double free") || IsPanicOf("buddy", "memkit/extent: double free") || IsPanicOf("buddy", 42) {
		t.Fatal("IsPanicOf of release messages")
	}
	if !IsPanicOf("extent", &checked.Misuse{Allocator: "extent"}) || IsPanicOf("buddy", &checked.Misuse{Allocator: "extent"}) {
		t.Fatal("IsPanicOf of a *checked.Misuse")
	}
	if checked.Enabled {
		m := &checked.Misuse{Allocator: "extent", Op: "Free", Kind: checked.DoubleFree}
		if !BadFreeOK("extent", "Free", func() { panic(m) }, nil, checked.ForeignFree, checked.DoubleFree) ||
			BadFreeOK("extent", "FreeRest", func() { panic(m) }, nil, checked.DoubleFree) {
			t.Fatal("BadFreeOK in the checked build")
		}
		return
	}
	msgs := []string{"memkit/extent: double free", "memkit/extent: foreign memory"}
	if !BadFreeOK("extent", "Free", func() { panic("memkit/extent: foreign memory") }, msgs) ||
		BadFreeOK("extent", "Free", func() { panic("memkit/extent: negative size") }, msgs) ||
		BadFreeOK("extent", "Free", func() {}, msgs) {
		t.Fatal("BadFreeOK in the release build")
	}
}

type noStats struct{}

func (noStats) ReadStats(*memkit.Stats) {}

// WriteAfterFree puts the byte back. Leaks reports nothing in the release
// build; in the checked build, what it reports of a source it does not
// track is no UseAfterFree, an error.
func TestWriteAfterFree_RestoresTheByte(t *testing.T) {
	b := []byte{7, 8}
	if err := WriteAfterFree(noStats{}, b); (err != nil) != checked.Enabled || b[0] != 7 {
		t.Fatalf("WriteAfterFree = %v, byte %d", err, b[0])
	}
}
