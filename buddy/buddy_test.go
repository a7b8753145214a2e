package buddy_test

import (
	"errors"
	"math/bits"
	"sync"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/buddy"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

func mustNew(t testing.TB, size, minBlock int, opts ...buddy.Option) *buddy.Allocator {
	t.Helper()
	a, err := buddy.New(size, minBlock, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

func mustAlloc(t testing.TB, a *buddy.Allocator, n int) []byte {
	t.Helper()
	b, err := a.Alloc(n)
	if err != nil {
		t.Fatalf("Alloc(%d): %v", n, err)
	}
	return b
}

// readStats reads the stats as the owner would, publishing first.
func readStats(a *buddy.Allocator) memkit.Stats {
	a.PublishStats()
	var s memkit.Stats
	a.ReadStats(&s)
	return s
}

// sources are the region sources every behavioural test runs against.
var sources = []struct {
	name string
	opts []buddy.Option
}{
	{"heap", nil},
	{"offheap", []buddy.Option{buddy.WithOffHeap()}},
}

func forEachSource(t *testing.T, size, minBlock int, f func(t *testing.T, a *buddy.Allocator)) {
	for _, src := range sources {
		t.Run("source="+src.name, func(t *testing.T) {
			a := mustNew(t, size, minBlock, src.opts...)
			defer a.Close()
			f(t, a)
		})
	}
}

func TestNew_InvalidArgumentsNameTheArgument(t *testing.T) {
	for _, tc := range []struct {
		size, minBlock int
		want           string
	}{
		{1 << 20, 48, "memkit/buddy: minBlock 48 must be a power of two >= 8"},
		{1 << 20, 4, "memkit/buddy: minBlock 4 must be a power of two >= 8"},
		{3 << 20, 64, "memkit/buddy: size 3145728 must be a power of two >= minBlock 64"},
		{32, 64, "memkit/buddy: size 32 must be a power of two >= minBlock 64"},
	} {
		a, err := buddy.New(tc.size, tc.minBlock)
		if a != nil || err == nil || err.Error() != tc.want {
			t.Errorf("New(%d, %d) = %v, %v; want nil, %q", tc.size, tc.minBlock, a, err, tc.want)
		}
	}
}

func TestNew_TooManyBlocks(t *testing.T) {
	if bits.UintSize == 32 {
		t.Skip("a region of more than 2^30 blocks does not fit in an int")
	}
	size := 1 << (bits.UintSize - 30) // 1<<34 on 64-bit; no constant overflow on 32-bit
	a, err := buddy.New(size, 8)
	if want := "memkit/buddy: size 17179869184 / minBlock 8 is more than 2^30 blocks"; a != nil || err == nil || err.Error() != want {
		t.Fatalf("New(1<<34, 8) = %v, %v; want nil, %q", a, err, want)
	}
}

// TestNew_MoreThanTheSystemCanProvide asks for regions no machine serves:
// an error, not the runtime's fatal "out of memory" (issue 13, case 6).
func TestNew_MoreThanTheSystemCanProvide(t *testing.T) {
	if bits.UintSize == 32 {
		t.Skip("the sizes do not fit in an int")
	}
	size := 1 << (bits.UintSize - 24) // 1<<40 on 64-bit
	a, err := buddy.New(size, 1<<10)
	if want := "memkit/buddy: size 1099511627776 with minBlock 1024 needs 1109175304192 bytes of the Go heap, more than the system can provide: use a smaller size or a larger minBlock"; a != nil || err == nil || err.Error() != want {
		t.Fatalf("New(1<<40, 1<<10) = %v, %v; want nil, %q", a, err, want)
	}
	// Off the heap, the mapping is refused with an error, or granted: a
	// kernel that overcommits maps it without backing it.
	if a, err := buddy.New(size<<20, 1<<30, buddy.WithOffHeap()); err == nil {
		_ = a.Close()
	}
}

// TestNew_NilOptionAndAlertThreshold: a nil option, an alert threshold <= 0
// or above the region, and a nil alert function are errors naming them
// (issue 13, case 10); the budget rules are every package's.
func TestNew_NilOptionAndAlertThreshold(t *testing.T) {
	fn := func(int64, bool) {}
	for _, tc := range []struct {
		opt  buddy.Option
		want string
	}{
		{nil, "memkit/buddy: option 1 of 1 is nil"},
		{buddy.WithBudgetAlert(0, fn), "memkit/buddy: WithBudgetAlert(0, fn): the threshold must be > 0 bytes"},
		{buddy.WithBudgetAlert(-5, fn), "memkit/buddy: WithBudgetAlert(-5, fn): the threshold must be > 0 bytes"},
		{buddy.WithBudgetAlert(64, nil), "memkit/buddy: WithBudgetAlert(64, nil): fn is nil; leave the option out for no alert"},
		{buddy.WithBudgetAlert(8192, fn), "memkit/buddy: WithBudgetAlert(8192, fn): the threshold is above the region's size 4096, so the alert could never fire"},
	} {
		if a, err := buddy.New(4096, 64, tc.opt); a != nil || err == nil || err.Error() != tc.want {
			t.Errorf("New = %v, %v; want nil, %q", a, err, tc.want)
		}
	}
}

func TestAllocator_AllocRoundsToPowerOfTwoAndLocksCapacity(t *testing.T) {
	forEachSource(t, 1<<20, 64, func(t *testing.T, a *buddy.Allocator) {
		whole := mustAlloc(t, a, 1<<20)
		base := memtest.Addr(whole)
		a.Free(whole)
		for _, tc := range []struct{ n, c int }{{0, 64}, {1, 64}, {64, 64}, {65, 128}, {3000, 4096}, {4096, 4096}, {1 << 20, 1 << 20}} {
			b := mustAlloc(t, a, tc.n)
			if len(b) != tc.n || cap(b) != tc.c || a.BlockSize(tc.n) != tc.c {
				t.Fatalf("Alloc(%d): len %d cap %d; want len %d cap %d", tc.n, len(b), cap(b), tc.n, tc.c)
			}
			if (memtest.Addr(b)-base)%uintptr(tc.c) != 0 {
				t.Fatalf("Alloc(%d) at offset %d: not aligned to its size", tc.n, memtest.Addr(b)-base)
			}
			full := b[:cap(b)]
			if g := append(full, 1); memtest.Addr(g) == memtest.Addr(full) {
				t.Fatalf("Alloc(%d): append past cap wrote in place", tc.n)
			}
			a.Free(b)
		}
	})
}

func TestAllocator_AllocNegativePanics(t *testing.T) {
	a := mustNew(t, 4096, 64)
	memtest.CheckPanic(t, "memkit/buddy: negative size", func() { _, _ = a.Alloc(-1) })
	memtest.CheckPanic(t, "memkit/buddy: negative size", func() { a.BlockSize(-1) })
}

func TestAllocator_ExhaustionFailsWithoutSideEffects(t *testing.T) {
	forEachSource(t, 64<<10, 64, func(t *testing.T, a *buddy.Allocator) {
		var live [][]byte
		for range 1024 {
			live = append(live, mustAlloc(t, a, 64))
		}
		before := readStats(a)
		for _, n := range []int{1, 64 << 10, 64<<10 + 1} {
			if b, err := a.Alloc(n); b != nil || !errors.Is(err, buddy.ErrNoSpace) {
				t.Fatalf("full: Alloc(%d) = len %d, %v; want ErrNoSpace", n, len(b), err)
			}
		}
		after := readStats(a)
		if after.Failures != before.Failures+3 || after.Allocs != before.Allocs || after.InUseBytes != 64<<10 {
			t.Fatalf("failed Allocs changed the state: %v", &after)
		}
		// Free in an order that leaves buddies unmerged by the lazy path:
		// the whole region must still come back as one block.
		for i := 0; i < len(live); i += 2 {
			a.Free(live[i])
		}
		for i := 1; i < len(live); i += 2 {
			a.Free(live[i])
		}
		b := mustAlloc(t, a, 64<<10)
		a.Free(b)
	})
}

func TestAllocator_LazyMergeKeepsSteadyStateLocal(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build holds freed blocks in its quarantine, off the lists")
	}
	a := mustNew(t, 1<<20, 64)
	b := mustAlloc(t, a, 64)
	a.Free(b)
	// The region was split down to order 0 once; the freed block waits on
	// order 0's list instead of merging back up.
	if got := a.FreeBlocks(0); got != 2 {
		t.Fatalf("order 0 free blocks = %d; want 2 (block and its buddy)", got)
	}
	for range 1000 {
		c := mustAlloc(t, a, 64)
		if memtest.Addr(c) != memtest.Addr(b) {
			t.Fatal("Alloc+Free loop did not reuse the same block")
		}
		a.Free(c)
	}
	a.Coalesce()
	if got := a.FreeBlocks(14); got != 1 {
		t.Fatalf("after Coalesce, top order free blocks = %d; want 1", got)
	}
}

func TestAllocator_DoubleFreePanics(t *testing.T) {
	forEachSource(t, 1<<16, 64, func(t *testing.T, a *buddy.Allocator) {
		b := mustAlloc(t, a, 100)
		c := mustAlloc(t, a, 100)
		a.Free(b)
		memtest.WantMisuse(t, "buddy", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(b) })
		// Merged into a larger free block: still a double free.
		for range buddy.LazyReserve + 1 {
			a.Free(mustAlloc(t, a, 64))
		}
		a.Free(c)
		a.Coalesce()
		memtest.WantMisuse(t, "buddy", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(c) })
		memtest.WantMisuse(t, "buddy", panicDoubleFree, "Free", checked.DoubleFree, func() { a.Free(c[64:]) })
		if s := readStats(a); s.BadFrees != 3 {
			t.Fatalf("BadFrees = %d; want 3", s.BadFrees)
		}
	})
}

func TestAllocator_ForeignFreePanics(t *testing.T) {
	forEachSource(t, 1<<16, 64, func(t *testing.T, a *buddy.Allocator) {
		b := mustAlloc(t, a, 256)
		// The release build's foreign memory is, in the checked build, a
		// foreign free or a moved start.
		for _, tc := range []struct {
			name string
			b    []byte
			kind string
		}{
			{"heap", make([]byte, 64), checked.ForeignFree},
			{"nil", nil, checked.ForeignFree},
			{"unaligned", b[1:], checked.MovedFree},
			{"interior", b[64:], checked.MovedFree},
			{"grown capacity", unsafe.Slice(unsafe.SliceData(b), 512), checked.MovedFree},
		} {
			t.Run(tc.name, func(t *testing.T) {
				memtest.WantMisuse(t, "buddy", panicForeign, "Free", tc.kind, func() { a.Free(tc.b) })
			})
		}
		a.Free(b[:0]) // length does not matter
	})
}

func TestAllocator_StatsPerOrder(t *testing.T) {
	a := mustNew(t, 4096, 64)
	b := mustAlloc(t, a, 100)
	c := mustAlloc(t, a, 1000)
	s := readStats(a)
	if s.InUseBytes != 128+1024 || s.LiveObjects != 2 || s.ReservedBytes != 4096 || s.Allocs != 2 || s.Grows != 1 {
		t.Fatalf("stats %v", &s)
	}
	// 128 B at 0, 1 KiB at 1024: free are 128 B at 128, 256 B at 256,
	// 512 B at 512 and 2 KiB at 2048.
	if s.FreeBytes != 4096-128-1024 || s.LargestFree != 2048 || s.Fragmentation() != 1-2048.0/(4096-128-1024) {
		t.Fatalf("free %d, largest free %d, fragmentation %v; want %d, 2048, %v",
			s.FreeBytes, s.LargestFree, s.Fragmentation(), 4096-128-1024, 1-2048.0/(4096-128-1024))
	}
	if len(s.Classes) != 7 {
		t.Fatalf("%d rows; want 7 (64 B to 4 KiB)", len(s.Classes))
	}
	var reserved uint64
	for _, r := range s.Classes {
		reserved += r.ReservedBytes
	}
	if reserved != 4096 {
		t.Fatalf("rows reserve %d bytes; want the region, 4096", reserved)
	}
	if r := s.Classes[1]; r.Size != 128 || r.LiveObjects != 1 || r.IdleObjects != 1 {
		t.Fatalf("128 B row %+v", r)
	}
	a.Free(b)
	a.Free(c)
	a.Coalesce()
	s = readStats(a)
	if s.InUseBytes != 0 || s.LiveObjects != 0 || s.Frees != 2 || s.FreeBytes != 4096 || s.LargestFree != 4096 {
		t.Fatalf("after Free and Coalesce: %v", &s)
	}
}

func TestAllocator_ZeroAllocs(t *testing.T) {
	memtest.ReleaseOnly(t)
	a := mustNew(t, 1<<20, 64)
	for _, n := range []int{64, 4096, 100000} {
		if got := testing.AllocsPerRun(100, func() {
			b, _ := a.Alloc(n)
			a.Free(b)
		}); got != 0 {
			t.Fatalf("Alloc+Free(%d): %v allocs", n, got)
		}
	}
	var s memkit.Stats
	a.ReadStats(&s)
	if got := testing.AllocsPerRun(10, func() { a.ReadStats(&s) }); got != 0 {
		t.Fatalf("ReadStats: %v allocs", got)
	}
}

func TestAllocator_Close(t *testing.T) {
	forEachSource(t, 4096, 64, func(t *testing.T, a *buddy.Allocator) {
		b := mustAlloc(t, a, 64)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
		if _, err := a.Alloc(64); !errors.Is(err, buddy.ErrClosed) {
			t.Fatalf("Alloc after Close: %v; want ErrClosed", err)
		}
		memtest.WantMisuse(t, "buddy", panicForeign, "Free", checked.ForeignFree, func() { a.Free(b) })
		if s := readStats(a); s.ReservedBytes != 0 || s.Releases != 1 || s.FreeBytes != 0 || s.LargestFree != 0 {
			t.Fatalf("stats after Close: %v", &s)
		}
	})
}

// One allocator passed between goroutines under a mutex, its blocks written
// and freed on other goroutines than the ones that allocated them: run with
// -race, it must report nothing (the Allocator keeps no hidden shared state).
func TestAllocator_MutexGuardedAcrossGoroutines(t *testing.T) {
	a := mustNew(t, 1<<20, 64)
	var mu sync.Mutex
	ch := make(chan []byte, 16)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				mu.Lock()
				b, err := a.Alloc(1 + (i*31+g*7)%5000)
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				memtest.Fill(b, uint64(i))
				ch <- b
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range ch {
			b[0]++
			mu.Lock()
			a.Free(b)
			mu.Unlock()
		}
	}()
	wg.Wait()
	close(ch)
	<-done
	if s := readStats(a); s.LiveObjects != 0 || s.Allocs != 4000 {
		t.Fatalf("stats %v", &s)
	}
}
