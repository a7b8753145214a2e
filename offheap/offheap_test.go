package offheap_test

import (
	"bytes"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/offheap"
)

func mustAlloc(t testing.TB, n int) []byte {
	t.Helper()
	b, err := offheap.Alloc(n)
	if err != nil {
		t.Fatalf("Alloc(%d): %v", n, err)
	}
	return b
}

func mustFree(t testing.TB, b []byte) {
	t.Helper()
	if err := offheap.Free(b); err != nil {
		t.Fatalf("Free: %v", err)
	}
}

func stats() memkit.Stats {
	var s memkit.Stats
	offheap.ReadStats(&s)
	return s
}

func TestAlloc_LengthCapacityAlignmentZeroed(t *testing.T) {
	ps := offheap.PageSize()
	for _, n := range []int{0, 1, ps - 1, ps, ps + 1, 3 << 20} {
		b := mustAlloc(t, n)
		want := max((n+ps-1)/ps*ps, ps)
		if len(b) != n || cap(b) != want {
			t.Fatalf("Alloc(%d): len %d cap %d; want %d, %d", n, len(b), cap(b), n, want)
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(b[:1]))); p%uintptr(ps) != 0 {
			t.Fatalf("Alloc(%d) start %#x not page-aligned", n, p)
		}
		full := b[:cap(b)]
		if !bytes.Equal(full, make([]byte, len(full))) {
			t.Fatalf("Alloc(%d) is not zeroed", n)
		}
		for i := range full {
			full[i] = byte(i)
		}
		mustFree(t, b[:0]) // any length: the start names the mapping
	}
}

func TestAllocHuge(t *testing.T) {
	b, err := offheap.AllocHuge(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 1 || cap(b)%offheap.PageSize() != 0 {
		t.Fatalf("AllocHuge(1): len %d cap %d", len(b), cap(b))
	}
	if runtime.GOOS == "linux" && cap(b) != 2<<20 {
		t.Fatalf("AllocHuge(1) on linux: cap %d; want 2 MiB", cap(b))
	}
	b[:cap(b)][cap(b)-1] = 1
	mustFree(t, b)
}

func TestAlloc_NegativePanics(t *testing.T) {
	memtest.CheckPanic(t, "memkit/offheap: negative size", func() { _, _ = offheap.Alloc(-1) })
	memtest.CheckPanic(t, "memkit/offheap: negative size", func() { _, _ = offheap.AllocHuge(-1) })
}

func TestFree_DoubleFreePanics(t *testing.T) {
	b := mustAlloc(t, 100)
	mustFree(t, b)
	before := stats().BadFrees
	checkBadFree(t, checked.DoubleFree, func() { _ = offheap.Free(b) })
	if got := stats().BadFrees; got != before+1 {
		t.Fatalf("BadFrees = %d; want %d", got, before+1)
	}
}

func TestFree_ForeignPanics(t *testing.T) {
	b := mustAlloc(t, 2*offheap.PageSize())
	defer mustFree(t, b)
	// The release build's foreign memory is, in the checked build, a
	// foreign free or a moved start.
	for _, tc := range []struct {
		name string
		b    []byte
		kind string
	}{
		{"heap", make([]byte, 4096), checked.ForeignFree},
		{"interior", b[1:], checked.MovedFree},
		{"second page", b[offheap.PageSize():], checked.MovedFree},
		{"nil", nil, checked.ForeignFree},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBadFree(t, tc.kind, func() { _ = offheap.Free(tc.b) })
		})
	}
}

func TestRelease_ForeignPanics(t *testing.T) {
	b := mustAlloc(t, offheap.PageSize())
	defer mustFree(t, b)
	memtest.CheckPanic(t, "memkit/offheap: foreign memory", func() { _ = offheap.Release(make([]byte, 8192)) })
	// Past the end of the mapping.
	memtest.CheckPanic(t, "memkit/offheap: foreign memory", func() {
		_ = offheap.Release(unsafe.Slice(unsafe.SliceData(b), cap(b)+1))
	})
	if err := offheap.Release(nil); err != nil {
		t.Fatal(err)
	}
}

// rssPages reads the resident set size, in pages, from /proc/self/statm.
func rssPages(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm:", err)
	}
	f := strings.Fields(string(data))
	n, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRelease_ReturnsMemoryToTheOS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RSS is read from /proc and Release madvises on Linux only")
	}
	const size = 64 << 20
	b := mustAlloc(t, size)
	defer mustFree(t, b)
	before := rssPages(t)
	for i := 0; i < len(b); i += offheap.PageSize() {
		b[i] = 1
	}
	touched := rssPages(t)
	pages := size / offheap.PageSize()
	if touched-before < pages*9/10 {
		t.Fatalf("touching %d pages raised RSS by %d pages", pages, touched-before)
	}
	if err := offheap.Release(b); err != nil {
		t.Fatal(err)
	}
	released := rssPages(t)
	if touched-released < pages*9/10 {
		t.Fatalf("Release lowered RSS by %d pages; want about %d", touched-released, pages)
	}
	// Still mapped: released pages read as zero and can be written again.
	if b[0] != 0 || b[size-1] != 0 {
		t.Fatal("released pages do not read as zero")
	}
	b[0] = 7
	if b[0] != 7 {
		t.Fatal("write after Release lost")
	}
}

func TestRelease_KeepsPartialPages(t *testing.T) {
	ps := offheap.PageSize()
	b := mustAlloc(t, 3*ps)
	defer mustFree(t, b)
	for i := range b {
		b[i] = 0xAB
	}
	// [ps/2, 2ps+ps/2) covers only page 1 whole: pages 0 and 2 keep their bytes.
	if err := offheap.Release(b[ps/2 : 2*ps+ps/2]); err != nil {
		t.Fatal(err)
	}
	if b[ps-1] != 0xAB || b[2*ps] != 0xAB {
		t.Fatal("Release touched a page only partly inside its argument")
	}
	if offheap.MmapAvailable && runtime.GOOS == "linux" && b[ps] != 0 {
		t.Fatal("Release kept a whole page inside its argument")
	}
}

func TestReadStats(t *testing.T) {
	s0 := stats()
	b := mustAlloc(t, 1)
	c := mustAlloc(t, offheap.PageSize()+1)
	s1 := stats()
	ps := uint64(offheap.PageSize())
	if d := s1.InUseBytes - s0.InUseBytes; d != 3*ps {
		t.Fatalf("InUseBytes grew by %d; want %d", d, 3*ps)
	}
	if s1.LiveObjects-s0.LiveObjects != 2 || s1.Allocs-s0.Allocs != 2 || s1.ReservedBytes != s1.InUseBytes {
		t.Fatalf("after 2 Allocs: %v (before %v)", &s1, &s0)
	}
	mustFree(t, b)
	mustFree(t, c)
	s2 := stats()
	if s2.InUseBytes != s0.InUseBytes || s2.LiveObjects != s0.LiveObjects || s2.Frees-s0.Frees != 2 {
		t.Fatalf("after Free: %v (before %v)", &s2, &s0)
	}
	var s memkit.Stats
	offheap.ReadStats(&s)
	if a := testing.AllocsPerRun(10, func() { offheap.ReadStats(&s) }); a != 0 {
		t.Fatalf("ReadStats allocates %v times", a)
	}
}

// Many goroutines map, write, release and unmap at once; run with -race.
func TestConcurrentAllocFree(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var live [][]byte
			for i := range 200 {
				b, err := offheap.Alloc(1 + (i*g*977)%20000)
				if err != nil {
					t.Error(err)
					return
				}
				for j := range b {
					b[j] = byte(g)
				}
				live = append(live, b)
				if i%3 == 0 {
					x := live[0]
					live = live[1:]
					for _, v := range x {
						if v != byte(g) {
							t.Error("memory changed under its owner")
							return
						}
					}
					if err := offheap.Release(x); err != nil {
						t.Error(err)
					}
					if err := offheap.Free(x); err != nil {
						t.Error(err)
					}
				}
			}
			for _, b := range live {
				if err := offheap.Free(b); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

// A size no system can serve (2^48 bytes, past the address space a
// process gets) is an error from Alloc, on every platform: a refused mmap,
// or the Go-heap twin's sysmem check, never the runtime's fatal "out of
// memory" and never a mapping.
func TestAlloc_UnservableSizeIsAnError(t *testing.T) {
	const n = math.MaxInt>>15 + 1 // 2^48 with 64-bit ints
	if n < 1<<30 {
		t.Skip("32-bit: the size does not fit an int")
	}
	var before, after memkit.Stats
	offheap.ReadStats(&before)
	if b, err := offheap.Alloc(n); err == nil || b != nil {
		t.Fatalf("Alloc(%d) = %d bytes, %v; want an error", n, len(b), err)
	}
	offheap.ReadStats(&after)
	if after.InUseBytes != before.InUseBytes || after.Failures != before.Failures+1 {
		t.Fatalf("stats after the refused Alloc: %v (before %v)", &after, &before)
	}
}
