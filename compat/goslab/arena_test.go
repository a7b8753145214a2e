package slab_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	slab "github.com/memkit/memkit/compat/goslab"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// writeStringToBuffer is the write-up's helper: s, then zeros to the end of
// field (slab memory is not zeroed, in go-slab or here).
func writeStringToBuffer(field []byte, s string) {
	clear(field[copy(field, s):])
}

// Person is the fixed-layout record of the go-slab write-up.
type Person struct {
	Name    [25]byte
	Surname [25]byte
	Age     int
}

// TestGoSlabProgram_Person is the write-up's Person program: a record
// stored field by field in a buffer of unsafe.Sizeof(Person{}) bytes.
func TestGoSlabProgram_Person(t *testing.T) {
	arena := slab.NewArena(8, 1024, 2, nil)
	personBuf := arena.Alloc(int(unsafe.Sizeof(Person{})))
	writeStringToBuffer(personBuf[:25], "John")
	writeStringToBuffer(personBuf[25:50], "Doe")
	binary.LittleEndian.PutUint32(personBuf[50:], 30)
	if got := string(bytes.TrimRight(personBuf[:25], "\x00")); got != "John" {
		t.Fatalf("name %q", got)
	}
	if got := binary.LittleEndian.Uint32(personBuf[50:]); got != 30 {
		t.Fatalf("age %d", got)
	}
	if !arena.DecRef(personBuf) {
		t.Fatal("DecRef of the only reference did not report the last one")
	}
}

// Data is the write-up's record stored by Loc (with a fixed-size name: a Go
// string in slab memory is the pitfall the write-up warns about).
type Data struct {
	name [16]byte
	age  int
}

// TestGoSlabProgram_LocSlice is the write-up's "simple buffer": records
// kept as Locs, read back through LocToBuf, freed through DecRef.
func TestGoSlabProgram_LocSlice(t *testing.T) {
	arena := slab.NewArena(8, 1024, 2, nil)
	locSlice := make([]slab.Loc, 10)
	for i := range locSlice {
		buf := arena.Alloc(int(unsafe.Sizeof(Data{})))
		d := (*Data)(unsafe.Pointer(&buf[0]))
		writeStringToBuffer(d.name[:], fmt.Sprintf("Name%d", i))
		d.age = i
		locSlice[i] = arena.BufToLoc(buf)
	}
	for i, loc := range locSlice {
		d := (*Data)(unsafe.Pointer(&arena.LocToBuf(loc)[0]))
		if got := string(bytes.TrimRight(d.name[:], "\x00")); got != fmt.Sprintf("Name%d", i) || d.age != i {
			t.Fatalf("record %d: %q %d", i, got, d.age)
		}
	}
	for _, loc := range locSlice {
		arena.DecRef(arena.LocToBuf(loc))
	}
	st := arena.Stats(nil)
	if st["totAllocs"] != 10 || st["totDecRefZeroes"] != 10 || st["totDecRefs"] != 10 {
		t.Fatalf("stats %v", st)
	}
}

// TestGoSlabProgram_StatsDump is the write-up's stats dump: per-class keys
// split from the general ones by the slabClass- prefix.
func TestGoSlabProgram_StatsDump(t *testing.T) {
	arena := slab.NewArena(128, 1024, 2, nil)
	var bufs [][]byte
	for i := 0; i < 15; i++ {
		bufs = append(bufs, arena.Alloc(100))
	}
	arena.DecRef(arena.Alloc(1000))
	perClass := map[string]map[string]int64{}
	general := map[string]int64{}
	for k, v := range arena.Stats(map[string]int64{}) {
		if strings.HasPrefix(k, "slabClass-") {
			cls, name, _ := strings.Cut(k[len("slabClass-"):], "-")
			if perClass[cls] == nil {
				perClass[cls] = map[string]int64{}
			}
			perClass[cls][name] = v
			continue
		}
		general[k] = v
	}
	want128 := map[string]int64{"chunkSize": 128, "numSlabs": 2, "numChunks": 16, "numChunksInUse": 15, "numChunksFree": 1}
	if fmt.Sprint(perClass["000000"]) != fmt.Sprint(want128) {
		t.Fatalf("class 0: %v; want %v", perClass["000000"], want128)
	}
	if c := perClass["000003"]; c["chunkSize"] != 1024 || c["numSlabs"] != 1 || c["numChunks"] != 1 {
		t.Fatalf("class 3: %v", c)
	}
	for _, k := range []string{"totSlabClasses", "totAllocs", "totAddRefs", "totDecRefs", "totDecRefZeroes",
		"totGetNexts", "totSetNexts", "totMallocs", "totMallocErrs", "totTooBigErrs", "totAddSlabErrs",
		"totPushFreeChunks", "totPopFreeChunks", "totPopFreeChunkErrs"} {
		if _, ok := general[k]; !ok {
			t.Errorf("Stats lacks go-slab's key %s", k)
		}
	}
	if general["totAllocs"] != 16 || general["totDecRefs"] != 1 || general["totMallocs"] != 3 || general["totSlabClasses"] != 4 {
		t.Fatalf("general %v", general)
	}
	for _, b := range bufs {
		arena.DecRef(b)
	}
}

func TestArena_AllocTooBigReturnsNil(t *testing.T) {
	arena := slab.NewArena(8, 1024, 2, nil)
	if b := arena.Alloc(1025); b != nil {
		t.Fatalf("Alloc(1025) = len %d; want nil", len(b))
	}
	if got := arena.Stats(nil)["totTooBigErrs"]; got != 1 {
		t.Fatalf("totTooBigErrs %d", got)
	}
}

func TestArena_AllocMallocNilReturnsNil(t *testing.T) {
	arena := slab.NewArena(8, 1024, 2, func(int) []byte { return nil })
	if b := arena.Alloc(8); b != nil {
		t.Fatal("Alloc with a failing malloc returned a buffer")
	}
	if st := arena.Stats(nil); st["totMallocErrs"] != 1 || st["totAddSlabErrs"] != 1 {
		t.Fatalf("stats %v", st)
	}
}

func TestArena_BufToLocNilAndForeignAreNilLoc(t *testing.T) {
	arena := slab.NewArena(8, 1024, 2, nil)
	other := slab.NewArena(8, 1024, 2, nil)
	if !arena.BufToLoc(nil).IsNil() {
		t.Fatal("BufToLoc(nil) is not the nil Loc")
	}
	if !arena.BufToLoc(make([]byte, 8)).IsNil() {
		t.Fatal("BufToLoc of a heap buffer is not the nil Loc")
	}
	if !arena.BufToLoc(other.Alloc(8)).IsNil() {
		t.Fatal("BufToLoc of another arena's buffer is not the nil Loc")
	}
	if arena.LocToBuf(slab.NilLoc()) != nil {
		t.Fatal("LocToBuf(NilLoc()) != nil")
	}
	arena.LocAddRef(slab.NilLoc()) // ignored, as in go-slab
	arena.LocDecRef(slab.NilLoc())
}

func TestArena_LocSliceAndRefs(t *testing.T) {
	arena := slab.NewArena(8, 1024, 2, nil)
	buf := arena.Alloc(16)
	copy(buf, "0123456789abcdef")
	loc := arena.BufToLoc(buf)
	if got := string(arena.LocToBuf(loc.Slice(4, 3))); got != "456" {
		t.Fatalf("LocToBuf(Slice(4,3)) = %q", got)
	}
	arena.LocAddRef(loc)
	if arena.DecRef(buf) {
		t.Fatal("DecRef freed a chunk LocAddRef still holds")
	}
	arena.LocDecRef(loc)
	if arena.Owns(buf) {
		t.Fatal("Owns reports a freed chunk")
	}
	st := arena.Stats(nil)
	if st["totAddRefs"] != 1 || st["totDecRefs"] != 2 || st["totDecRefZeroes"] != 1 {
		t.Fatalf("stats %v", st)
	}
}

// The differences from go-slab docs/migrating.md lists: each panics, with
// memkit's message, where go-slab corrupted memory.
func TestArena_DecRefTwicePanics(t *testing.T) {
	arena := slab.NewArena(8, 1024, 2, nil)
	keep := arena.Alloc(8)
	copy(keep, "intact!!")
	buf := arena.Alloc(8)
	arena.DecRef(buf)
	memtest.WantMisuse(t, "slab", "memkit/slab: DecRef of a free chunk", "DecRef", checked.DoubleFree, func() { arena.DecRef(buf) })
	if string(keep) != "intact!!" {
		t.Fatalf("neighbour changed: %q", keep)
	}
}

func TestArena_StaleLocPanics(t *testing.T) {
	arena := slab.NewArena(8, 1024, 2, nil)
	buf := arena.Alloc(8)
	loc := arena.BufToLoc(buf)
	arena.DecRef(buf)
	again := arena.Alloc(8) // likely the same chunk, handed out again
	memtest.WantMisuse(t, "slab", "memkit/slab: stale handle", "LocToBuf", checked.StaleHandle, func() { arena.LocToBuf(loc) })
	memtest.WantMisuse(t, "slab", "memkit/slab: stale handle", "LocDecRef", checked.StaleHandle, func() { arena.LocDecRef(loc) })
	if !arena.Owns(again) {
		t.Fatal("the stale LocDecRef freed the new owner's chunk")
	}
}

func TestArena_BufToLocOfFreedChunkPanics(t *testing.T) {
	arena := slab.NewArena(8, 1024, 2, nil)
	keep := arena.Alloc(8) // keeps the slab
	buf := arena.Alloc(8)
	arena.DecRef(buf)
	memtest.WantMisuse(t, "slab", "memkit/slab: use of a free chunk", "BufToLoc", checked.StaleHandle, func() { arena.BufToLoc(buf) })
	arena.DecRef(keep)
}

func TestNewArena_BadParametersPanic(t *testing.T) {
	defer func() {
		r, _ := recover().(string)
		if !strings.HasPrefix(r, "memkit/goslab: NewArena: growthFactor") {
			t.Fatalf("panic %q", r)
		}
	}()
	slab.NewArena(8, 1024, 1, nil)
}

func TestArena_AllocDecRefAllocatesNothing(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build records a stack per Alloc")
	}
	arena := slab.NewArena(64, 1<<16, 2, nil)
	arena.DecRef(arena.Alloc(100)) // warm the class
	if n := testing.AllocsPerRun(1000, func() {
		b := arena.Alloc(100)
		arena.BufToLoc(b)
		arena.DecRef(b)
	}); n != 0 {
		t.Fatalf("%v allocs per Alloc+BufToLoc+DecRef", n)
	}
}
