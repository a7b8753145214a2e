package gomem_test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/memkit/memkit/compat/gomem"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/sysmem"
)

// tib64 is 64 TiB (a variable, so that 32-bit platforms compile int(tib64)).
var tib64 = uint64(1) << 46

func needRefused(t *testing.T) int {
	t.Helper()
	if math.MaxInt < 1<<46 || sysmem.Available(tib64) {
		t.Skip("needs a 64-bit system that refuses to map 64 TiB")
	}
	return int(tib64)
}

// TestMalloc_SizeTheMachineCannotServePanics: issue 21 case 1; gomem's
// Malloc above MaxBlockSize was a make that ended the process.
func TestMalloc_SizeTheMachineCannotServePanics(t *testing.T) {
	n := needRefused(t)
	a := gomem.NewScalableMemoryAllocator(1024)
	memtest.CheckPanic(t, "memkit/gomem: Malloc of 70368744177664 bytes: more than the system can provide", func() { a.Malloc(n) })
	a.Free(a.Malloc(10)) // still usable
}

// TestRead_LengthTheMachineCannotServeIsAnError: a peer's length field
// past the machine's memory is an error, and nothing is read.
func TestRead_LengthTheMachineCannotServeIsAnError(t *testing.T) {
	n := needRefused(t)
	a := gomem.NewScalableMemoryAllocator(1024)
	r := bytes.NewReader([]byte("payload"))
	mem, err := a.Read(r, n)
	if mem != nil || !errors.Is(err, extent.ErrBudget) ||
		err.Error() != "memkit/gomem: Read of 70368744177664 bytes: more than the system can provide: "+extent.ErrBudget.Error() {
		t.Fatalf("Read(64 TiB) = %d bytes, %v", len(mem), err)
	}
	if r.Len() != 7 {
		t.Fatalf("Read consumed %d bytes of a length it refused", 7-r.Len())
	}
}

// TestRead_HostileLengthCostsWhatThePeerSent: a 1 GiB length followed by
// 100 KiB and the end of the stream allocated 1 GiB before reading a byte;
// now it costs about what arrived.
func TestRead_HostileLengthCostsWhatThePeerSent(t *testing.T) {
	if math.MaxInt < 1<<32 {
		t.Skip("64-bit only")
	}
	a := gomem.NewScalableMemoryAllocator(1024)
	sent := bytes.Repeat([]byte{7}, 100<<10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	mem, err := a.Read(bytes.NewReader(sent), 1<<30)
	runtime.ReadMemStats(&after)
	if mem != nil || err != io.ErrUnexpectedEOF {
		t.Fatalf("Read(1 GiB) of 100 KiB = %d bytes, %v; want io.ErrUnexpectedEOF", len(mem), err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("Read(1 GiB) of a 100 KiB stream allocated %d bytes; want under 1 MiB", got)
	}
}

// TestRead_SizesReadBack: every size reads back exactly, through a reader
// that returns little at a time, and what the allocator serves it takes
// back.
func TestRead_SizesReadBack(t *testing.T) {
	a := gomem.NewScalableMemoryAllocator(1 << 16)
	for _, n := range []int{0, 1, 64 << 10, 64<<10 + 1, 1 << 20, 3<<20 + 5, gomem.MaxBlockSize, gomem.MaxBlockSize + 1, 9 << 20} {
		src := make([]byte, n+3)
		memtest.Fill(src, uint64(n))
		mem, err := a.Read(iotest.HalfReader(bytes.NewReader(src)), n)
		if err != nil || len(mem) != n || cap(mem) != n || !bytes.Equal(mem, src[:n]) {
			t.Fatalf("Read(%d) = %d bytes (cap %d), %v", n, len(mem), cap(mem), err)
		}
		if own := a.Free(mem); own != (n > 0 && n <= gomem.MaxBlockSize) {
			t.Fatalf("Read(%d): Free = %v", n, own)
		}
		if _, err := a.Read(bytes.NewReader(src[:n/2]), n); n > 1 && err != io.ErrUnexpectedEOF {
			t.Fatalf("Read(%d) of %d bytes: %v", n, n/2, err)
		}
	}
	if _, err := a.Read(bytes.NewReader(nil), 100<<10); err != io.EOF {
		t.Fatalf("Read of an empty stream: %v; want io.EOF", err)
	}
}

// TestBorrow_WithoutRecycleStaysFlat: issue 21 case 8. gomem's README and
// benchmarks call Borrow in a loop without Recycle; the drop-in's heap grew
// without bound (1 GiB after 111,000 Borrow(8192)), where gomem's stays
// flat. The heap after a GC must not grow with the number of Borrows.
func TestBorrow_WithoutRecycleStaysFlat(t *testing.T) {
	a := gomem.NewScalableMemoryAllocator(1 << 16)
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	a.Borrow(8192)
	before := heap()
	for i := range 200_000 {
		b := a.Borrow(8192)
		b[0], b[8191] = byte(i), byte(i) // used at once, as gomem asks
	}
	if grew := int64(heap()) - int64(before); grew > 4<<20 {
		t.Fatalf("200,000 Borrow(8192) without Recycle grew the heap by %d bytes; want under 4 MiB", grew)
	}
	runtime.KeepAlive(a)
}

// TestBorrow_LendsScratchMallocNeverHandsOut: the scratch Borrow lends is
// the allocator's, so Malloc never returns bytes of it, and a Free of it
// panics rather than give it away while Borrow still lends it.
func TestBorrow_LendsScratchMallocNeverHandsOut(t *testing.T) {
	a := gomem.NewScalableMemoryAllocator(4096)
	for _, n := range []int{0, 1, 100, 5000, 100, 70_000, 3} {
		b := a.Borrow(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("Borrow(%d): len %d cap %d", n, len(b), cap(b))
		}
		memtest.Fill(b, uint64(n))
		var live [][]byte
		for i := range 50 {
			m := a.Malloc(64 + i*37)
			if memtest.Overlap(m, b) {
				t.Fatalf("Malloc returned bytes Borrow(%d) lends", n)
			}
			live = append(live, m)
		}
		if err := memtest.Verify(b, uint64(n)); err != nil {
			t.Fatalf("Borrow(%d) memory changed by Malloc: %v", n, err)
		}
		for _, m := range live {
			a.Free(m)
		}
	}
	b := a.Borrow(100)
	memtest.CheckPanic(t, "memkit/gomem: Free of Borrow memory", func() { a.Free(b[10:20]) })
	c := a.Malloc(10)
	memtest.CheckPanic(t, "memkit/gomem: Free of Borrow memory", func() { a.FreeRest(&b, 50) })
	a.Free(c)
	a.Recycle()
	if b := a.Borrow(10); len(b) != 10 {
		t.Fatal("Borrow after Recycle")
	}
	if big := a.Borrow(gomem.MaxBlockSize + 1); len(big) != gomem.MaxBlockSize+1 {
		t.Fatal("Borrow above MaxBlockSize")
	}
}
