package extent_test

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/owned"
)

func mustNew(t testing.TB, opts ...extent.Option) *extent.Allocator {
	t.Helper()
	a, err := extent.New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// readStats reads the stats as the owner would, publishing first.
func readStats(a interface{ ReadStats(*memkit.Stats) }) memkit.Stats {
	if o, ok := a.(*extent.Allocator); ok {
		o.PublishStats()
	}
	var s memkit.Stats
	a.ReadStats(&s)
	return s
}

// freeInfo is what the tests check of an allocator's free memory.
type freeInfo struct {
	FreeBytes, LargestFree uint64
	FreeRanges             int
	Fragmentation          float64
}

// freeStats reads the free-memory gauges of ReadStats and the number of
// free ranges, and checks that FreeBytes is ReservedBytes less InUseBytes.
// Ranges in the front cache are merged into the index first.
func freeStats(a *extent.Allocator) freeInfo {
	ranges := a.FreeRanges()
	s := readStats(a)
	if s.FreeBytes != s.ReservedBytes-s.InUseBytes {
		panic("FreeBytes is not ReservedBytes - InUseBytes: " + s.String())
	}
	return freeInfo{s.FreeBytes, s.LargestFree, ranges, s.Fragmentation()}
}

func checkTree(t *testing.T, a *extent.Allocator) {
	t.Helper()
	if msg := a.CheckTree(); msg != "" {
		t.Fatal("free-range index:", msg)
	}
}

// sources are the block sources every behavioural test runs against.
var sources = []struct {
	name string
	opts []extent.Option
}{
	{"heap", nil},
	{"offheap", []extent.Option{extent.WithOffHeap()}},
}

func forEachSource(t *testing.T, f func(t *testing.T, opts ...extent.Option)) {
	for _, src := range sources {
		t.Run("source="+src.name, func(t *testing.T) { f(t, src.opts...) })
	}
}

func TestNew_InvalidOptionsNameTheOption(t *testing.T) {
	for _, tc := range []struct {
		opt  extent.Option
		want string
	}{
		{extent.WithBlockSize(10), "memkit/extent: BlockSize 10 must be between 64 and 1GiB"},
		{extent.WithGrowth(0.5), "memkit/extent: Growth 0.5 must be between 1 and 16"},
		{extent.WithBudget(0), "memkit/extent: WithBudget(0): a budget is a number of bytes > 0; leave the option out for no limit"},
		{extent.WithBudget(-1), "memkit/extent: WithBudget(-1): a budget is a number of bytes > 0; leave the option out for no limit"},
		{extent.WithBudget(1000), "memkit/extent: WithBudget(1000) is less than BlockSize 1048576: raise the budget or lower WithBlockSize"},
		{extent.WithBorrowChunk(2 << 20), "memkit/extent: BorrowChunk 2097152 must be between 64 and BlockSize 1048576"},
		{extent.WithBudgetAlert(0, func(int64, bool) {}), "memkit/extent: WithBudgetAlert(0, fn): the threshold must be > 0 bytes"},
		{extent.WithBudgetAlert(-1, func(int64, bool) {}), "memkit/extent: WithBudgetAlert(-1, fn): the threshold must be > 0 bytes"},
		{extent.WithBudgetAlert(1, nil), "memkit/extent: WithBudgetAlert(1, nil): fn is nil; leave the option out for no alert"},
		{nil, "memkit/extent: option 1 of 1 is nil"},
	} {
		a, err := extent.New(tc.opt)
		if a != nil || err == nil || err.Error() != tc.want {
			t.Errorf("New = %v, %v; want nil, %q", a, err, tc.want)
		}
		if s, err := extent.NewShared(tc.opt); s != nil || err == nil {
			t.Errorf("NewShared = %v, %v; want an error", s, err)
		}
	}
}

// TestAllocator_MoreThanTheSystemCanProvide asks for sizes no machine
// serves: a memkit panic or error, not makeslice's panic or the runtime's
// fatal "out of memory" (issue 13, case 6).
func TestAllocator_MoreThanTheSystemCanProvide(t *testing.T) {
	forEachSource(t, func(t *testing.T, opts ...extent.Option) {
		a := mustNew(t, opts...)
		keep := a.Malloc(100)
		memtest.Fill(keep, 1)
		if bits.UintSize == 32 {
			t.Skip("the sizes do not fit in an int")
		}
		for _, n := range []int{1 << (bits.UintSize - 2), 1 << (bits.UintSize - 14)} { // 1<<62, 1<<50
			memtest.CheckPanic(t, fmt.Sprintf("memkit/extent: Malloc of %d bytes: more than the system can provide", n), func() { a.Malloc(n) })
			memtest.CheckPanic(t, fmt.Sprintf("memkit/extent: Borrow of %d bytes: more than the system can provide", n), func() { a.Borrow(n) })
			b, err := a.TryMalloc(n)
			want := fmt.Sprintf("memkit/extent: TryMalloc of %d bytes: more than the system can provide", n)
			if b != nil || !errors.Is(err, extent.ErrBudget) || !errors.Is(err, budget.NewErrBudget("x", "")) || err.Error() != want {
				t.Fatalf("TryMalloc(%d) = %d bytes, %v; want %q, an ErrBudget", n, len(b), err, want)
			}
		}
		if err := memtest.Verify(keep, 1); err != nil {
			t.Fatal(err)
		}
		if s := readStats(a); s.Failures != 2 || s.Grows != 1 || s.HeapFallbacks != 0 {
			t.Fatalf("stats %v; want 2 failures, 1 grow, no fallback", &s)
		}
	})
}

func TestAllocator_MallocExactSizeLockedCapacity(t *testing.T) {
	forEachSource(t, func(t *testing.T, opts ...extent.Option) {
		a := mustNew(t, opts...)
		defer a.Close()
		var prev []byte
		for _, n := range []int{1, 7, 64, 1500, 4096, 100000} {
			b := a.Malloc(n)
			if len(b) != n || cap(b) != n {
				t.Fatalf("Malloc(%d): len %d cap %d", n, len(b), cap(b))
			}
			if g := append(b, 1); memtest.Addr(g) == memtest.Addr(b) {
				t.Fatalf("Malloc(%d): append past cap wrote in place", n)
			}
			if prev != nil && memtest.Addr(b) != memtest.Addr(prev)+uintptr(len(prev)+extent.GuardTail) {
				t.Fatalf("Malloc(%d) not carved right after the previous range (first fit)", n)
			}
			prev = b
		}
		if b := a.Malloc(0); b == nil || len(b) != 0 {
			t.Fatalf("Malloc(0) = %v; want an empty non-nil slice", b)
		}
		memtest.CheckPanic(t, "memkit/extent: negative size", func() { a.Malloc(-1) })
		memtest.CheckPanic(t, "memkit/extent: negative size", func() { _, _ = a.TryMalloc(-1) })
		memtest.CheckPanic(t, "memkit/extent: negative size", func() { a.Borrow(-1) })
		checkTree(t, a)
	})
}

// gomem's README example: free any sub-slice, in any order.
func TestAllocator_PartialFree(t *testing.T) {
	forEachSource(t, func(t *testing.T, opts ...extent.Option) {
		a := mustNew(t, append(opts, extent.WithBlockSize(4096))...)
		defer a.Close()
		buf := a.Malloc(1024)
		part1, part2, part3 := buf[0:256], buf[256:512], buf[512:1024]
		copy(part3, "part 3")
		a.Free(part1)
		a.Free(part2)
		if fs := freeStats(a); fs.FreeBytes != uint64(4096-512-extent.GuardTail) || fs.FreeRanges != 2 {
			t.Fatalf("after freeing 2 parts: %+v", fs)
		}
		if string(part3[:6]) != "part 3" {
			t.Fatal("the part still allocated changed")
		}
		a.Free(part3[100:200]) // a hole in the middle
		a.Free(part3[:100])
		a.Free(part3[200:])
		checkTree(t, a)
		if fs := freeStats(a); fs.FreeBytes != 4096 || fs.FreeRanges != 1 || fs.LargestFree != 4096 || fs.Fragmentation != 0 {
			t.Fatalf("after freeing everything: %+v; want one 4 KiB range", fs)
		}
	})
}

func TestAllocator_FreeRest(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(4096))
	b := a.Malloc(1000)
	copy(b, "header")
	h := a.FreeRest(b, 6)
	if string(h) != "header" || cap(h) != 6 {
		t.Fatalf("FreeRest = %q cap %d", h, cap(h))
	}
	if fs := freeStats(a); fs.FreeBytes != 4096-6 {
		t.Fatalf("free bytes %d; want %d", fs.FreeBytes, 4096-6)
	}
	// The freed tail is reused.
	c := a.Malloc(994)
	if memtest.Addr(c) != memtest.Addr(b)+6 {
		t.Fatal("the freed tail was not reused first")
	}
	memtest.CheckPanic(t, "memkit/extent: FreeRest keep out of range", func() { a.FreeRest(h, 7) })
	memtest.CheckPanic(t, "memkit/extent: FreeRest keep out of range", func() { a.FreeRest(h, -1) })
	if got := a.FreeRest(h, 6); len(got) != 6 {
		t.Fatal("FreeRest keeping everything changed the slice")
	}
}

func TestAllocator_DoubleFreePanics(t *testing.T) {
	forEachSource(t, func(t *testing.T, opts ...extent.Option) {
		a := mustNew(t, append(opts, extent.WithBlockSize(4096))...)
		defer a.Close()
		b := a.Malloc(100)
		c := a.Malloc(100)
		a.Malloc(100)
		a.Free(b)
		memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(b) })
		memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(b[10:20]) })
		// Overlapping a free range on either side.
		a.Free(c[40:60])
		memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(c[50:70]) })
		memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(c[30:41]) })
		memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(c[0:100]) })
		// Spanning the free range b and the live c.
		memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(unsafe.Slice(unsafe.SliceData(b), 150)) })
		if s := readStats(a); s.BadFrees != 6 {
			t.Fatalf("BadFrees = %d; want 6", s.BadFrees)
		}
		checkTree(t, a)
		a.Free(c[:40]) // the rest still frees fine
		a.Free(c[60:])
	})
}

func TestAllocator_ForeignFreePanics(t *testing.T) {
	forEachSource(t, func(t *testing.T, opts ...extent.Option) {
		a := mustNew(t, append(opts, extent.WithBlockSize(4096))...)
		defer a.Close()
		b := a.Malloc(4096 - extent.GuardTail) // the whole block
		memtest.WantMisuse(t, "extent", panicForeign, "Free", checked.ForeignFree, func() { a.Free(make([]byte, 64)) })
		bad := uint64(1)
		if len(opts) > 0 {
			// Past the block's end (a slice that checkptr, under -race,
			// only lets us build outside the Go heap).
			memtest.WantMisuse(t, "extent", panicForeign, "Free", checked.ForeignFree, func() { a.Free(unsafe.Slice(unsafe.SliceData(b[4000:]), 200)) })
			bad++
		}
		other := mustNew(t)
		memtest.WantMisuse(t, "extent", panicForeign, "Free", checked.ForeignFree, func() { a.Free(other.Malloc(10)) })
		a.Free(nil) // empty: nothing to free
		if s := readStats(a); s.BadFrees != bad+1 || s.Frees != 0 {
			t.Fatalf("stats %v", &s)
		}
		a.Free(b)
	})
}

// Whatever the order of frees, neighbours coalesce: freeing every piece
// leaves one range per block.
func TestAllocator_CoalescesInAnyOrder(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(64<<10))
	r := rand.New(rand.NewPCG(1, 1))
	var live [][]byte
	for range 2000 {
		live = append(live, a.Malloc(1+r.IntN(300)))
	}
	r.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	for i, b := range live {
		a.Free(b)
		if i%97 == 0 {
			checkTree(t, a)
		}
	}
	checkTree(t, a)
	fs, s := freeStats(a), readStats(a)
	if fs.FreeRanges != a.Blocks() || fs.FreeBytes != s.ReservedBytes || s.InUseBytes != 0 {
		t.Fatalf("after freeing all: %+v, %d blocks, %v", fs, a.Blocks(), &s)
	}
}

// Malloc finds a fitting range wherever it is, and grows only when none
// fits.
func TestAllocator_FindsAnyFitBeforeGrowing(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(1<<16))
	var pieces [][]byte
	for range 64 {
		pieces = append(pieces, a.Malloc(1024-extent.GuardTail))
	}
	// Free every other piece but one larger hole near the end.
	for i := 0; i < 60; i += 2 {
		a.Free(pieces[i])
	}
	a.Free(pieces[61])
	a.Free(pieces[62])
	a.Free(pieces[63]) // 3 KiB hole at the end
	b := a.Malloc(3000)
	if memtest.Addr(b) != memtest.Addr(pieces[61]) {
		t.Fatal("Malloc(3000) did not take the only range that fits")
	}
	if s := readStats(a); s.Grows != 1 {
		t.Fatalf("grew %d blocks; want 1", s.Grows)
	}
	a.Malloc(2000) // fits nowhere now
	if s := readStats(a); s.Grows != 2 {
		t.Fatalf("grew %d blocks; want 2", s.Grows)
	}
}

func TestAllocator_BudgetFallsBackToHeap(t *testing.T) {
	forEachSource(t, func(t *testing.T, opts ...extent.Option) {
		a := mustNew(t, append(opts, extent.WithBlockSize(4096), extent.WithBudget(8192))...)
		defer a.Close()
		x, y := a.Malloc(4096-extent.GuardTail), a.Malloc(4096-extent.GuardTail)
		before := readStats(a)
		if b, err := a.TryMalloc(1); b != nil || !errors.Is(err, extent.ErrBudget) {
			t.Fatalf("TryMalloc past the budget = %d bytes, %v", len(b), err)
		}
		after := readStats(a)
		if after.Failures != before.Failures+1 || after.ReservedBytes != 8192 || after.Allocs != before.Allocs {
			t.Fatalf("failed TryMalloc changed the state: %v", &after)
		}
		f := a.Malloc(5000)
		s := readStats(a)
		fb := uint64(5000 + extent.GuardTail)
		if len(f) != 5000 || s.HeapFallbacks != 1 || s.ReservedBytes != 8192+fb || s.InUseBytes != 8192+fb {
			t.Fatalf("fallback: len %d, %v", len(f), &s)
		}
		// Fallback memory frees like any other, in parts, and is dropped
		// once all free.
		a.Free(f[1000:2000])
		memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(f[1500:1600]) })
		rest := a.FreeRest(f[:1000], 10)
		a.Free(f[2000:])
		a.Free(rest)
		a.FlushRecent() // the checked build's quarantine gives the ranges back
		s = readStats(a)
		if s.ReservedBytes != 8192 || s.Releases != 1 {
			t.Fatalf("after freeing the fallback: %v", &s)
		}
		a.Free(x)
		a.Free(y)
	})
}

// gomem's thrash pattern: Malloc 8 KiB, Free, repeat, with a Trim in every
// iteration. Reserved memory must stay flat: no block released and
// reserved again.
func TestAllocator_AllocFreeLoopDoesNotThrash(t *testing.T) {
	forEachSource(t, func(t *testing.T, opts ...extent.Option) {
		a := mustNew(t, opts...)
		defer a.Close()
		for i := range 10000 {
			b := a.Malloc(8 << 10)
			b[0] = byte(i)
			a.Free(b)
			a.Trim()
		}
		s := readStats(a)
		if s.Grows != 1 || s.Releases != 0 || s.ReservedBytes != extent.DefaultBlockSize {
			t.Fatalf("after 10000 iterations: %v", &s)
		}
	})
}

// Trim releases what the peak since the previous Trim does not need.
func TestAllocator_TrimReleasesIdleBlocks(t *testing.T) {
	forEachSource(t, func(t *testing.T, opts ...extent.Option) {
		a := mustNew(t, append(opts, extent.WithBlockSize(4096))...)
		defer a.Close()
		var live [][]byte
		for range 8 {
			live = append(live, a.Malloc(4096-extent.GuardTail))
		}
		for _, b := range live[2:] {
			a.Free(b)
		}
		if got := a.Trim(); got != 0 {
			t.Fatalf("first Trim released %d bytes within the peak", got)
		}
		if got := a.Trim(); got != 6*4096 {
			t.Fatalf("second Trim released %d bytes; want the 6 idle blocks", got)
		}
		s := readStats(a)
		if s.ReservedBytes != 2*4096 || s.Releases != 6 || s.InUseBytes != 2*4096 {
			t.Fatalf("after Trim: %v", &s)
		}
		a.Free(live[0])
		a.Free(live[1])
		a.Trim() // the peak since the last Trim was 8 KiB: kept
		if s := readStats(a); s.ReservedBytes != 2*4096 {
			t.Fatalf("Trim released within the peak: %v", &s)
		}
		a.Trim()
		if s := readStats(a); s.ReservedBytes != 0 {
			t.Fatalf("idle allocator kept %d bytes", s.ReservedBytes)
		}
		b := a.Malloc(100) // and grows again on demand
		a.Free(b)
	})
}

func TestAllocator_BorrowRecycle(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(1<<16), extent.WithBorrowChunk(1024))
	m := memtest.NewModel(0)
	for round := range 3 {
		for range 10 {
			if _, err := m.Add(a.Borrow(300)); err != nil {
				t.Fatal(err)
			}
		}
		big := a.Borrow(5000) // a chunk of its own
		if len(big) != 5000 || cap(big) != 5000 {
			t.Fatalf("Borrow(5000): len %d cap %d", len(big), cap(big))
		}
		if _, err := m.Add(big); err != nil {
			t.Fatal(err)
		}
		if err := m.VerifyAll(); err != nil {
			t.Fatal(err)
		}
		a.Recycle()
		m.Live = m.Live[:0]
		s := readStats(a)
		if s.Allocs != 0 || s.Frees != 0 || s.InUseBytes != 5000 {
			t.Fatalf("round %d: after Recycle %v; want only the current chunk in use", round, &s)
		}
	}
	if b := a.Borrow(0); len(b) != 0 {
		t.Fatal("Borrow(0) not empty")
	}
}

func TestAllocator_Close(t *testing.T) {
	forEachSource(t, func(t *testing.T, opts ...extent.Option) {
		a := mustNew(t, opts...)
		b := a.Malloc(100)
		a.Borrow(10)
		a.Close()
		s := readStats(a)
		if s.ReservedBytes != 0 || s.InUseBytes != 0 || s.Releases != 1 {
			t.Fatalf("after Close: %v", &s)
		}
		memtest.WantMisuse(t, "extent", panicForeign, "Free", checked.ForeignFree, func() { a.Free(b) })
		a.Free(a.Malloc(10)) // usable again
		a.Close()
	})
}

func TestAllocator_ZeroAllocs(t *testing.T) {
	memtest.ReleaseOnly(t)
	a := mustNew(t)
	for _, n := range []int{64, 4096, 64 << 10} {
		if got := testing.AllocsPerRun(100, func() { a.Free(a.Malloc(n)) }); got != 0 {
			t.Fatalf("Malloc+Free(%d): %v allocs", n, got)
		}
	}
	if got := testing.AllocsPerRun(100, func() { b, _ := a.TryMalloc(100); a.FreeRest(b, 10); a.Free(b[:10]) }); got != 0 {
		t.Fatalf("TryMalloc+FreeRest+Free: %v allocs", got)
	}
	a.Recycle()
	if got := testing.AllocsPerRun(100, func() {
		for range 100 {
			a.Borrow(1000)
		}
		a.Recycle()
	}); got != 0 {
		t.Fatalf("Borrow+Recycle: %v allocs", got)
	}
	r := extent.NewRecyclable(a)
	r.NextN(1)
	r.Recycle()
	if got := testing.AllocsPerRun(100, func() { r.NextN(100); r.NextN(200); r.AddRecycleBytes(a.Malloc(5)); r.Recycle() }); got > 0 {
		t.Fatalf("Recyclable NextN+Recycle: %v allocs", got)
	}
	var s memkit.Stats
	if got := testing.AllocsPerRun(10, func() { a.ReadStats(&s) }); got != 0 {
		t.Fatalf("ReadStats: %v allocs", got)
	}
	sh, _ := extent.NewShared()
	if got := testing.AllocsPerRun(100, func() { sh.Free(sh.Malloc(64)) }); got != 0 {
		t.Fatalf("Shared Malloc+Free: %v allocs", got)
	}
}

func TestRecyclable(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(4096))
	r := extent.NewRecyclable(a)
	b1 := r.NextN(128)
	b2 := r.NextN(256)
	other := a.Malloc(64)
	r.AddRecycleBytes(other[:32]) // a part of an allocation
	r.NextN(0)
	if r.Len() != 3 || len(b1) != 128 || len(b2) != 256 {
		t.Fatalf("batch of %d pieces", r.Len())
	}
	r.Recycle()
	if r.Len() != 0 {
		t.Fatal("Recycle left pieces in the batch")
	}
	if fs := freeStats(a); fs.FreeBytes != uint64(4096-32-extent.GuardTail) {
		t.Fatalf("after Recycle: %+v", fs)
	}
	a.Free(other[32:])
	// A piece freed twice panics as the allocator's Free does.
	r.AddRecycleBytes(other)
	memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, r.Recycle)
}

// An Allocator per goroutine, and a Shared allocator whose memory is freed
// on other goroutines than the ones that allocated it: run with -race.
func TestConcurrentUse(t *testing.T) {
	t.Run("allocator-per-goroutine", func(t *testing.T) {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := mustNew(t, extent.WithBlockSize(1<<16))
				m := memtest.NewModel(g)
				for i := range 2000 {
					if len(m.Live) < 50 {
						if _, err := m.Add(a.Malloc(1 + i%700)); err != nil {
							t.Error(err)
							return
						}
					} else {
						b, err := m.Remove(i % len(m.Live))
						if err != nil {
							t.Error(err)
							return
						}
						a.Free(b)
					}
				}
			}()
		}
		wg.Wait()
	})
	t.Run("shared-cross-goroutine-free", func(t *testing.T) {
		s, err := extent.NewShared(extent.WithBlockSize(1 << 16))
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan []byte, 32)
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 3000 {
					b := s.Malloc(1 + (i*13+g)%2000)
					memtest.Fill(b, uint64(i))
					ch <- b
				}
			}()
		}
		var consumers sync.WaitGroup
		for range 2 {
			consumers.Add(1)
			go func() {
				defer consumers.Done()
				for b := range ch {
					if len(b) > 10 {
						b = s.FreeRest(b, 10)
					}
					s.Free(b)
				}
			}()
		}
		wg.Wait()
		close(ch)
		consumers.Wait()
		st := readStats(s)
		if st.InUseBytes != 0 || st.Allocs != 6000 || st.FreeBytes != st.ReservedBytes || st.LargestFree == 0 {
			t.Fatalf("stats %v", &st)
		}
		if got := s.Trim() + s.Trim(); got == 0 {
			t.Fatal("Trim of an idle Shared released nothing")
		}
		s.Close()
	})
}

func TestAllocator_Growth(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(4096), extent.WithGrowth(2))
	for range 4 {
		a.Malloc(4096 - extent.GuardTail) // each fills its block: the next Malloc grows
	}
	// Blocks of 4, 8, 16 KiB: the third and fourth Malloc fit in the 8 KiB
	// block, so three blocks in all.
	if s := readStats(a); s.Grows != 3 || s.ReservedBytes != 4096+8192+16384 {
		t.Fatalf("stats %v; want blocks of 4, 8 and 16 KiB", &s)
	}
	big := a.Malloc(1 << 20) // larger than the next block: a block of its own
	if s := readStats(a); s.Grows != 4 || len(big) != 1<<20 {
		t.Fatalf("stats %v", &s)
	}
}

// Free takes a range spanning several adjacent allocations.
func TestAllocator_FreeSpanningAllocations(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(4096))
	x := a.Malloc(100)
	a.Malloc(100)
	z := a.Malloc(100)
	// From x's first byte to z's last: 300 bytes, and the guard bytes
	// between them in the checked build.
	a.Free(unsafe.Slice(unsafe.SliceData(x), memtest.Addr(z)+uintptr(len(z))-memtest.Addr(x)))
	checkTree(t, a)
	if fs := freeStats(a); fs.FreeBytes != 4096 || fs.FreeRanges != 1 {
		t.Fatalf("after freeing three allocations at once: %+v", fs)
	}
}

// Heap fallbacks do not count against the budget: once blocks are freed and
// trimmed, the budget is available again even while a fallback is live.
func TestAllocator_FallbackOutsideBudget(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(4096), extent.WithBudget(4096))
	x := a.Malloc(4096 - extent.GuardTail)
	f := a.Malloc(4096 - extent.GuardTail) // fallback
	a.Free(x)
	a.Trim()
	a.Trim()
	if s := readStats(a); s.ReservedBytes != 4096 || s.HeapFallbacks != 1 {
		t.Fatalf("stats %v; want only the fallback reserved", &s)
	}
	if _, err := a.TryMalloc(4096 - extent.GuardTail); err != nil {
		t.Fatalf("TryMalloc within the budget: %v", err)
	}
	a.Free(f)
}

// A panic inside a Shared call releases its lock: the allocator stays
// usable.
func TestShared_PanicsReleaseTheLock(t *testing.T) {
	s, err := extent.NewShared(extent.WithBlockSize(4096))
	if err != nil {
		t.Fatal(err)
	}
	b := s.Malloc(100)
	s.Free(b)
	memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { s.Free(b) })
	memtest.WantMisuse(t, "extent", panicForeign, "Free", checked.ForeignFree, func() { s.Free(make([]byte, 8)) })
	memtest.CheckPanic(t, "memkit/extent: negative size", func() { s.Malloc(-1) })
	memtest.CheckPanic(t, "memkit/extent: FreeRest keep out of range", func() { s.FreeRest(b, 101) })
	c, err := s.TryMalloc(100)
	if err != nil || len(c) != 100 {
		t.Fatalf("TryMalloc after panics: %d bytes, %v", len(c), err)
	}
	s.Free(c)
	if st := readStats(s); st.BadFrees != 2 || st.InUseBytes != 0 {
		t.Fatalf("stats %v", &st)
	}
}

// Goroutines Borrow from one Shared at once, each writing its own pattern;
// after they are done one Recycle ends every Borrow: run with -race. No two
// Borrows overlap, each reads back, and Recycle gives back all but the
// current chunk.
func TestShared_BorrowRecycleConcurrent(t *testing.T) {
	s, err := extent.NewShared(extent.WithBlockSize(1<<16), extent.WithBorrowChunk(4096))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		models := make([]*memtest.Model, 4)
		var wg sync.WaitGroup
		for g := range models {
			m := memtest.NewModel(round*len(models) + g)
			models[g] = m
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 300 {
					if _, err := m.Add(s.Borrow(1 + (i*7+g)%900)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := memtest.CheckDisjoint(models...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, m := range models {
			if err := m.VerifyAll(); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		s.Recycle()
		// All that stays in use is each shard's current chunk, with its
		// guard bytes in the checked build.
		if st := readStats(s); st.InUseBytes > uint64(s.Shards())*(4096+uint64(extent.GuardTail)) || st.Allocs != 0 || st.Frees != 0 {
			t.Fatalf("round %d, after Recycle: %v", round, &st)
		}
	}
	memtest.CheckPanic(t, "memkit/extent: negative size", func() { s.Borrow(-1) })
	s.Recycle() // the lock was released by the panic
}

func TestShared_BorrowZeroAllocs(t *testing.T) {
	memtest.ReleaseOnly(t)
	s, _ := extent.NewShared()
	s.Borrow(100)
	s.Recycle()
	if got := testing.AllocsPerRun(100, func() {
		for range 100 {
			s.Borrow(1000)
		}
		s.Recycle()
	}); got != 0 {
		t.Fatalf("Shared Borrow+Recycle: %v allocs", got)
	}
}

// The last ranges freed wait in a front cache before they are merged into
// the index. A Free touching a byte of one of them is a double free all
// the same, from either side, spanning it, once it has been merged, and
// when the cache is full; a caught Free changes nothing.
func TestAllocator_DoubleFreeOfRecentFrees(t *testing.T) {
	a := mustNew(t, extent.WithBlockSize(1<<16))
	var bufs [][]byte
	for range 40 {
		bufs = append(bufs, a.Malloc(100))
	}
	g := extent.GuardTail
	span := func(x, y []byte) []byte { // from x's first byte to y's last
		return unsafe.Slice(unsafe.SliceData(x), memtest.Addr(y)+uintptr(len(y))-memtest.Addr(x))
	}
	a.Free(bufs[1])
	a.Free(bufs[3][:50])
	bad := uint64(0)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"same range", bufs[1]},
		{"inside", bufs[1][10:20]},
		{"from the left", span(bufs[0], bufs[1])[90:]},
		{"to the right", span(bufs[1], bufs[2])[50 : 150+g]},
		{"spanning", span(bufs[0], bufs[2])},
		{"a partial free", bufs[3][49:51]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(tc.b) })
			bad++
		})
	}
	// Fill the cache and more: the first frees are merged into the index
	// or freed there directly; every one is still caught.
	for i := 4; i < 40; i += 2 {
		a.Free(bufs[i])
	}
	for i := 4; i < 40; i += 2 {
		memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(bufs[i]) })
		memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(span(bufs[i-1], bufs[i])[90:]) })
		bad += 2
	}
	if s := readStats(a); s.BadFrees != bad || s.Frees != 20 {
		t.Fatalf("stats %v; want %d bad frees and 20 frees", &s, bad)
	}
	checkTree(t, a)
}

// A Malloc of the size of a recent Free takes that range back; one that
// fits only once the recent frees are merged does not grow a block.
func TestAllocator_RecentFreesReusedBeforeGrowing(t *testing.T) {
	memtest.ReleaseOnly(t) // exact placement: no guard bytes
	a := mustNew(t, extent.WithBlockSize(4096))
	parts := make([][]byte, 8)
	for i := range parts {
		parts[i] = a.Malloc(512)
	}
	a.Free(parts[5])
	if b := a.Malloc(512); memtest.Addr(b) != memtest.Addr(parts[5]) {
		t.Fatalf("Malloc(512) after freeing a 512-byte range took %#x, not the range at %#x", memtest.Addr(b), memtest.Addr(parts[5]))
	}
	for _, p := range parts {
		a.Free(p)
	}
	b := a.Malloc(4096) // fits only once the eight ranges are merged
	if s := readStats(a); s.Grows != 1 || memtest.Addr(b) != memtest.Addr(parts[0]) {
		t.Fatalf("stats %v, Malloc(4096) at %#x; want the first block, at %#x", &s, memtest.Addr(b), memtest.Addr(parts[0]))
	}
}

// The front cache changes no placement: a cached range is taken back only
// where first fit would go no lower.
func TestAllocator_RecentFreesKeepFirstFit(t *testing.T) {
	memtest.ReleaseOnly(t) // exact placement: no guard bytes
	a := mustNew(t, extent.WithBlockSize(4096))
	x, y, z, w := a.Malloc(512), a.Malloc(512), a.Malloc(512), a.Malloc(512)
	a.Free(w)
	if b := a.Malloc(512); memtest.Addr(b) != memtest.Addr(w) { // below every free range
		t.Fatalf("Malloc(512) after freeing the range at %#x took %#x", memtest.Addr(w), memtest.Addr(b))
	}
	a.Free(x)
	readStats(a) // merges x into the index
	a.Free(z)
	if n := a.RecentLen(); n != 1 {
		t.Fatalf("%d ranges in the front cache; want z's", n)
	}
	if b := a.Malloc(512); memtest.Addr(b) != memtest.Addr(x) {
		t.Fatalf("Malloc(512) took %#x; want first fit, x's range at %#x, not z's at %#x", memtest.Addr(b), memtest.Addr(x), memtest.Addr(z))
	}
	if b := a.Malloc(512); memtest.Addr(b) != memtest.Addr(z) {
		t.Fatalf("second Malloc(512) took %#x; want z's range at %#x", memtest.Addr(b), memtest.Addr(z))
	}
	_ = y
}

// A Free that leaves a block entirely free gives it back once the recent
// peak of use has fallen far enough below what the other blocks hold, and
// not while the peak is recent.
func TestAllocator_FreeGivesBackBlocksAfterUseFell(t *testing.T) {
	forEachSource(t, func(t *testing.T, opts ...extent.Option) {
		const block, piece = 64 << 10, 4 << 10
		a := mustNew(t, append(opts, extent.WithBlockSize(block))...)
		defer a.Close()
		var live [][]byte
		for range 3 * block / piece {
			live = append(live, a.Malloc(piece-extent.GuardTail))
		}
		if s := readStats(a); s.ReservedBytes != 3*block {
			t.Fatalf("after filling three blocks: %v", &s)
		}
		// Empty the second block and all but one piece of the third: the
		// second is entirely free while the peak (three blocks) is recent,
		// so it stays.
		per := block / piece
		for _, b := range live[per : 3*per-1] {
			a.Free(b)
		}
		if s := readStats(a); s.ReservedBytes != 3*block || s.Releases != 0 {
			t.Fatalf("block given back while the peak was recent: %v", &s)
		}
		// Use stays near one block for 20000 Frees, and the peak decays.
		for range 20000 {
			a.Free(a.Malloc(piece - extent.GuardTail))
		}
		// Now the last piece's Free empties the third block, and the first
		// two hold more than the recent peak plus a quarter: it goes back.
		a.Free(live[3*per-1])
		s := readStats(a)
		if s.ReservedBytes != 2*block || s.Releases != 1 || s.InUseBytes != uint64(per*piece) {
			t.Fatalf("after use fell to one block: %v", &s)
		}
	})
}

// An alloc/free loop that needs a block of its own never gives it back:
// its peak is renewed every turn.
func TestAllocator_BlockSizedLoopDoesNotThrash(t *testing.T) {
	forEachSource(t, func(t *testing.T, opts ...extent.Option) {
		const block = 64 << 10
		a := mustNew(t, append(opts, extent.WithBlockSize(block))...)
		defer a.Close()
		keep := a.Malloc(block / 2)
		for i := range 20000 {
			b := a.Malloc(block - extent.GuardTail) // never fits beside keep
			b[0] = byte(i)
			a.Free(b)
		}
		a.Free(keep)
		if s := readStats(a); s.Grows != 2 || s.Releases != 0 || s.ReservedBytes != 2*block {
			t.Fatalf("after 20000 iterations: %v", &s)
		}
	})
}

// Close gives every block back to the registry of memkit-owned memory, as
// Trim does: a Put of memory at a closed off-heap block's address is not
// refused as extent's.
func TestAllocator_CloseUnregistersBlocks(t *testing.T) {
	a := mustNew(t, extent.WithOffHeap(), extent.WithBlockSize(1<<16))
	b := a.Malloc(100)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if owned.Owner(p) != "extent" {
		t.Fatalf("a live block's memory is owned by %q; want extent", owned.Owner(p))
	}
	a.Close()
	if o := owned.Owner(p); o != "" {
		t.Fatalf("after Close the block's memory is still owned by %q", o)
	}
}
