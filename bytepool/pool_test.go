package bytepool_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/keep"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

func mustNew(t testing.TB, opts ...bytepool.Option) *bytepool.Pool {
	t.Helper()
	p, err := bytepool.New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// policies are the configurations every behavioural test runs against.
var policies = []struct {
	name string
	opts []bytepool.Option
}{
	{"elastic", []bytepool.Option{bytepool.WithExactStats()}},
	{"bounded", []bytepool.Option{bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(16 << 20)}},
	{"zeroing", []bytepool.Option{bytepool.WithZeroing(), bytepool.WithExactStats()}},
}

func forEachPolicy(t *testing.T, f func(t *testing.T, p *bytepool.Pool)) {
	for _, pc := range policies {
		t.Run("policy="+pc.name, func(t *testing.T) { f(t, mustNew(t, pc.opts...)) })
	}
}

func readStats(p *bytepool.Pool) memkit.Stats {
	var s memkit.Stats
	p.ReadStats(&s)
	return s
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)]))) }

// releaseOnly skips a test of the release build's handling of a misuse,
// which the checked build reports with a panic instead (misuse_test.go).
func releaseOnly(t *testing.T) {
	t.Helper()
	if checked.Enabled {
		t.Skip("release build only: the checked build panics (see misuse_test.go)")
	}
}

func TestNew_InvalidOptionsNameTheOption(t *testing.T) {
	for _, tc := range []struct {
		opt  bytepool.Option
		want string
	}{
		{bytepool.WithMinSize(100), "memkit/bytepool: MinSize 100 must be a power of two >= 8"},
		{bytepool.WithMinSize(4), "memkit/bytepool: MinSize 4 must be a power of two >= 8"},
		{bytepool.WithMaxSize(3000), "memkit/bytepool: MaxSize 3000 must be a power of two"},
		{bytepool.WithMaxSize(32), "memkit/bytepool: MaxSize 32 < MinSize 64"},
		{bytepool.WithClassesPerDoubling(3), "memkit/bytepool: ClassesPerDoubling 3 must be a power of two between 1 and 64"},
		{bytepool.WithClassesPerDoubling(16), "memkit/bytepool: MinSize 64 with ClassesPerDoubling 16 gives classes 4 bytes apart; need at least 8 (raise MinSize or lower ClassesPerDoubling)"},
		{bytepool.WithPolicy(7), "memkit/bytepool: Policy 7 is neither Elastic nor Bounded"},
		{bytepool.WithLockedFrom(0), "memkit/bytepool: LockedFrom 0 is not > 0; leave the option out for the default (262144), or pass more than MaxSize for no locked class"},
	} {
		p, err := bytepool.New(tc.opt)
		if p != nil || err == nil || err.Error() != tc.want {
			t.Errorf("New = %v, %v; want nil, %q", p, err, tc.want)
		}
	}
	_, err := bytepool.New(bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(1000))
	want := "memkit/bytepool: WithBudget(1000): a Bounded pool's region must be between 64KiB and 128TiB"
	if math.MaxInt < 1<<32 {
		want = "memkit/bytepool: WithBudget(1000): a Bounded pool's region must be between 64KiB and 2.0GiB" // what an int can hold
	}
	if err == nil || err.Error() != want {
		t.Errorf("New(Bounded, Budget 1000) error = %v; want %q", err, want)
	}
}

func TestPool_ClassesSpacing(t *testing.T) {
	p := mustNew(t)
	got := p.Classes()[:10]
	want := []int{64, 80, 96, 112, 128, 160, 192, 224, 256, 320}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("classes = %v; want %v", got, want)
	}
	if last := p.Classes()[len(p.Classes())-1]; last != bytepool.DefaultMaxSize {
		t.Fatalf("largest class = %d; want %d", last, bytepool.DefaultMaxSize)
	}
	// Every n maps to the smallest class that holds it: compare with a
	// linear search over the whole range, for two spacings.
	for _, per := range []int{1, 4} {
		p := mustNew(t, bytepool.WithClassesPerDoubling(per), bytepool.WithMaxSize(1<<16))
		classes := p.Classes()
		j := 0
		for n := 0; n <= 1<<16; n++ {
			for classes[j] < n {
				j++
			}
			if got := p.ClassSize(n); got != classes[j] {
				t.Fatalf("per=%d: ClassSize(%d) = %d; want %d", per, n, got, classes[j])
			}
		}
		// The waste bound: a class is never more than 1/per larger than the
		// request (plus the minimum class).
		for n := 65; n <= 1<<16; n++ {
			if c := p.ClassSize(n); float64(c-n) > float64(n)/float64(per) {
				t.Fatalf("per=%d: ClassSize(%d) = %d wastes more than 1/%d", per, n, c, per)
			}
		}
	}
}

func TestPool_GetLengthAndLockedCapacity(t *testing.T) {
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		for _, n := range []int{1, 63, 64, 65, 100, 4095, 4096, 4097, 1 << 20} {
			b := p.Get(n)
			if len(b) != n || cap(b) != p.ClassSize(n) {
				t.Fatalf("Get(%d): len %d cap %d; want len %d cap %d", n, len(b), cap(b), n, p.ClassSize(n))
			}
			// append past cap must move, never write past the class.
			full := b[:cap(b)]
			grown := append(full, 1)
			if addr(grown) == addr(full) {
				t.Fatalf("Get(%d): append past cap wrote in place", n)
			}
			p.Put(b)
		}
	})
}

func TestPool_GetNegativePanics(t *testing.T) {
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		memtest.CheckPanic(t, "memkit/bytepool: negative size", func() { p.Get(-1) })
		memtest.CheckPanic(t, "memkit/bytepool: negative size", func() { p.TryGet(-1) })
		memtest.CheckPanic(t, "memkit/bytepool: negative size", func() { p.NewCache().Get(-5) })
	})
}

func TestPool_GetZeroIsEmptyNonNil(t *testing.T) {
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		b := p.Get(0)
		if b == nil || len(b) != 0 || cap(b) != 64 {
			t.Fatalf("Get(0) = %v (len %d cap %d); want empty non-nil with cap 64", b == nil, len(b), cap(b))
		}
		p.Put(b)
		if s := readStats(p); s.LiveObjects != 0 || s.Allocs != 1 || s.Frees != 1 {
			t.Fatalf("after Get(0)+Put: %+v", s)
		}
	})
}

func TestPool_OversizeGoesToHeapAndIsCounted(t *testing.T) {
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		n := bytepool.DefaultMaxSize + 1
		b := p.Get(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(b), cap(b))
		}
		s := readStats(p)
		if s.HeapFallbacks != 1 || s.Allocs != 1 || s.LiveObjects != 1 || s.InUseBytes != uint64(n) {
			t.Fatalf("after oversize Get: %+v", s)
		}
		p.Put(b)
		s = readStats(p)
		if s.Frees != 1 || s.LiveObjects != 0 || s.InUseBytes != 0 || s.BadFrees != 0 {
			t.Fatalf("after oversize Put: %+v", s)
		}
		if _, ok := p.TryGet(n); ok {
			t.Fatal("TryGet above the largest class succeeded")
		}
		if s := readStats(p); s.Failures != 1 {
			t.Fatalf("Failures = %d; want 1", s.Failures)
		}
	})
}

func TestPool_PutForeignCapacityIsBadFreeAndNotReused(t *testing.T) {
	releaseOnly(t)
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		foreign := make([]byte, 100) // 100 is no class
		p.Put(foreign)
		moved := p.Get(4096)[1:] // start moved: cap 4095
		p.Put(moved)
		if s := readStats(p); s.BadFrees != 2 || s.Frees != 0 {
			t.Fatalf("BadFrees = %d, Frees = %d; want 2, 0", s.BadFrees, s.Frees)
		}
		for i := 0; i < 200; i++ {
			if b := p.Get(100); addr(b) == addr(foreign) {
				t.Fatal("a foreign buffer was filed into a class")
			}
		}
	})
}

func TestBounded_PutMovedStartOfAnotherClassIsBadFree(t *testing.T) {
	releaseOnly(t)
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(16<<20))
	b := p.Get(96)
	p.Put(b[16:]) // cap 80 is a class, but this is not an 80-byte buffer
	s := readStats(p)
	if s.BadFrees != 1 || s.Frees != 0 {
		t.Fatalf("BadFrees = %d, Frees = %d; want 1, 0", s.BadFrees, s.Frees)
	}
	p.Put(b) // the real buffer is still accepted
	if s := readStats(p); s.Frees != 1 || s.LiveObjects != 0 {
		t.Fatalf("after the real Put: %+v", s)
	}
}

func TestBounded_DoubleFreePanics(t *testing.T) {
	releaseOnly(t)
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(16<<20))
	b := p.Get(1000)
	p.Put(b)
	memtest.CheckPanic(t, "memkit/bytepool: double free", func() { p.Put(b) })
	// The failed Put changed nothing: the buffer is handed out once.
	x, y := p.Get(1000), p.Get(1000)
	if addr(x) == addr(y) {
		t.Fatal("one buffer handed out twice after a double free")
	}
	c := p.NewCache()
	z := c.Get(1000)
	c.Put(z)
	memtest.CheckPanic(t, "memkit/bytepool: double free", func() { c.Put(z) })
}

func TestBounded_BudgetExhaustion(t *testing.T) {
	const size = 64 << 10
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithMaxSize(size),
		bytepool.WithBudget(2*size))
	if p.RegionSize() != 2*size {
		t.Fatalf("region = %d; want %d", p.RegionSize(), 2*size)
	}
	a, ok1 := p.TryGet(size)
	b, ok2 := p.TryGet(size - 1) // same class
	if !ok1 || !ok2 {
		t.Fatal("TryGet failed within the budget")
	}
	before := readStats(p)
	if _, ok := p.TryGet(size); ok {
		t.Fatal("TryGet succeeded past the budget")
	}
	after := readStats(p)
	if after.Failures != before.Failures+1 || after.Allocs != before.Allocs || after.LiveObjects != before.LiveObjects {
		t.Fatalf("failed TryGet changed state: before %+v after %+v", before, after)
	}
	fb := p.Get(size) // falls back to the heap
	if cap(fb) != size || p.RegionSize() != 2*size {
		t.Fatalf("fallback cap %d", cap(fb))
	}
	s := readStats(p)
	// Reserved is the whole region plus the live fallback.
	if s.HeapFallbacks != 1 || s.ReservedBytes != 3*size || s.LiveObjects != 3 {
		t.Fatalf("after fallback: %v", &s)
	}
	p.Put(fb)
	if s := readStats(p); s.ReservedBytes != 2*size || s.InUseBytes != 2*size {
		t.Fatalf("after the fallback's Put: %v", &s)
	}
	p.Put(a)
	if c, ok := p.TryGet(size); !ok || addr(c) != addr(a) {
		t.Fatalf("TryGet after Put: ok %v, reused %v", ok, ok && addr(c) == addr(a))
	}
	p.Put(b)
	if s := readStats(p); s.ReservedBytes > 2*size {
		t.Fatalf("reserved %d exceeds the budget %d", s.ReservedBytes, 2*size)
	}
}

func TestBounded_StealsFromOtherShardsBeforeFallingBack(t *testing.T) {
	const size = 64 << 10
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithMaxSize(size), bytepool.WithBudget(size))
	b := p.Get(size)
	done := make(chan struct{})
	go func() { p.Put(b); close(done) }() // probably another shard
	<-done
	if _, ok := p.TryGet(size); !ok {
		t.Fatal("the only buffer was idle but TryGet failed")
	}
}

func TestPool_Zeroing(t *testing.T) {
	p := mustNew(t, bytepool.WithZeroing())
	b := p.Get(1000)
	for i := range b[:cap(b)] {
		b[:cap(b)][i] = 0xAA
	}
	p.Put(b[:cap(b)]) // the whole capacity was written: put it back whole
	c := p.Get(999)
	if addr(c) != addr(b) && !checked.Enabled && !race.Enabled {
		t.Fatal("buffer not reused")
	}
	for i, x := range c[:cap(c)] {
		if x != 0 {
			t.Fatalf("byte %d = %#x after Get from a zeroing pool", i, x)
		}
	}
}

func TestPool_ZeroAllocs(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build records every Get")
	}
	if race.Enabled {
		t.Skip("sync.Pool drops a quarter of the buffers at random under the race detector, so Gets allocate")
	}
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		for _, n := range []int{64, 512, 4096, 65536, 1 << 20} {
			p.Put(p.Get(n)) // warm
			if a := testing.AllocsPerRun(100, func() { p.Put(p.Get(n)) }); a != 0 {
				t.Errorf("Pool Get+Put(%d): %v allocs/op; want 0", n, a)
			}
			c := p.NewCache()
			c.Put(c.Get(n))
			if a := testing.AllocsPerRun(100, func() { c.Put(c.Get(n)) }); a != 0 {
				t.Errorf("Cache Get+Put(%d): %v allocs/op; want 0", n, a)
			}
			if a := testing.AllocsPerRun(100, func() { b, _ := p.TryGet(n); p.Put(b) }); a != 0 {
				t.Errorf("TryGet+Put(%d): %v allocs/op; want 0", n, a)
			}
		}
		var s memkit.Stats
		p.ReadStats(&s)
		if a := testing.AllocsPerRun(10, func() { p.ReadStats(&s) }); a != 0 {
			t.Errorf("ReadStats: %v allocs/op; want 0", a)
		}
	})
}

func TestElastic_RetentionDecaysAfterBurst(t *testing.T) {
	p := mustNew(t)
	const size, count = 64 << 10, 1024 // 64 MiB burst
	bufs := make([][]byte, count)
	for i := range bufs {
		bufs[i] = p.Get(size)
	}
	for _, b := range bufs {
		p.Put(b)
	}
	clear(bufs)
	if s := readStats(p); s.ReservedBytes < size*count || s.Grows != count {
		t.Fatalf("right after the burst: %v", &s)
	}
	giveBackIdle(p, withClock(p))
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	if !checked.Enabled && ms.HeapInuse > 64<<20/10+32<<20 {
		t.Fatalf("two idle periods and 3 GCs after the burst the heap holds %d bytes of a 64 MiB burst", ms.HeapInuse)
	}
	// The finalizers that count the buffers collected run after the cycle.
	s := waitStats(t, p, func(s *memkit.Stats) bool { return s.ReservedBytes <= size*count/10 })
	if s.Releases < count*9/10 {
		t.Fatalf("Releases = %d; want at least %d", s.Releases, count*9/10)
	}
	// The pool still works.
	b := p.Get(size)
	p.Put(b)
}

func TestElastic_UnreachablePoolIsCollected(t *testing.T) {
	collected := make(chan struct{})
	func() {
		p := mustNew(t)
		p.Put(p.Get(100))
		runtime.AddCleanup(p, func(ch chan struct{}) { close(ch) }, collected)
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		runtime.GC()
		select {
		case <-collected:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("an unreachable Elastic pool was not collected: the decay sentinel keeps it alive")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPool_StatsFollowAModel(t *testing.T) {
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		rng := rand.New(rand.NewPCG(1, 2))
		var live [][]byte
		var allocs, frees uint64
		for i := 0; i < 5000; i++ {
			if len(live) > 0 && rng.IntN(2) == 0 {
				j := rng.IntN(len(live))
				p.Put(live[j])
				live[j] = live[len(live)-1]
				live = live[:len(live)-1]
				frees++
				continue
			}
			live = append(live, p.Get(rng.IntN(70000)))
			allocs++
		}
		var inUse uint64
		for _, b := range live {
			inUse += uint64(cap(b))
		}
		s := readStats(p)
		if s.Allocs != allocs || s.Frees != frees || s.LiveObjects != uint64(len(live)) || s.InUseBytes != inUse {
			t.Fatalf("stats %+v; model allocs %d frees %d live %d in use %d", s, allocs, frees, len(live), inUse)
		}
		// A Bounded pool may fall back to the heap here: its region can run
		// out for one class while other classes hold idle slabs, and how
		// many idle buffers each class keeps depends on which shards they
		// went to, which follows the goroutine's stack address and so moves
		// when a GC shrinks the stack (a 16 MiB region ran out after 5000
		// operations in 1 of 40 checked-build runs under load). The
		// counters above hold either way.
		if s.ReservedBytes < s.InUseBytes || s.BadFrees != 0 || s.HeapFallbacks != 0 && p.Policy() != bytepool.Bounded {
			t.Fatalf("stats %+v", s)
		}
		var rows memkit.ClassStats
		for _, c := range s.Classes {
			rows.Allocs += c.Allocs
			rows.LiveObjects += c.LiveObjects
			rows.InUseBytes += c.InUseBytes
		}
		if rows.Allocs != s.Allocs || rows.LiveObjects != s.LiveObjects || rows.InUseBytes != s.InUseBytes {
			t.Fatalf("class rows sum to %+v; totals %+v", rows, s)
		}
	})
}

func TestPool_ConcurrentCrossGoroutine(t *testing.T) {
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		const workers, rounds = 6, 3000
		ch := make(chan memtest.Block, 64)
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				m := memtest.NewModel(w)
				useCache := w%2 == 0
				c := p.NewCache()
				defer c.Release()
				get := p.Get
				put := p.Put
				if useCache {
					get, put = c.Get, c.Put
				}
				for i := 0; i < rounds; i++ {
					switch op := rng.IntN(4); {
					case op < 2 || len(m.Live) == 0:
						if _, err := m.Add(get(1 + rng.IntN(20000))); err != nil {
							errs <- err
							return
						}
					case op == 2: // hand a block to whoever is listening
						j := rng.IntN(len(m.Live))
						blk := m.Live[j]
						if _, err := m.Remove(j); err != nil {
							errs <- err
							return
						}
						memtest.Fill(blk.Buf, blk.Seed) // still ours until sent
						select {
						case ch <- blk:
						default:
							put(blk.Buf)
						}
					default:
						b, err := m.Remove(rng.IntN(len(m.Live)))
						if err != nil {
							errs <- err
							return
						}
						put(b)
					}
					select {
					case blk := <-ch: // a block from another goroutine
						if err := memtest.Verify(blk.Buf, blk.Seed); err != nil {
							errs <- err
							return
						}
						put(blk.Buf)
					default:
					}
				}
				for len(m.Live) > 0 {
					b, err := m.Remove(0)
					if err != nil {
						errs <- err
						return
					}
					put(b)
				}
			}(w)
		}
		wg.Wait()
		close(ch)
		for blk := range ch {
			p.Put(blk.Buf)
		}
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		s := readStats(p)
		if s.LiveObjects != 0 || s.Allocs != s.Frees || s.BadFrees != 0 || s.InUseBytes != 0 {
			t.Fatalf("after every buffer came back: %+v", s)
		}
	})
}

func TestDefaultPool(t *testing.T) {
	b := bytepool.Get(300)
	if len(b) != 300 || cap(b) != 320 {
		t.Fatalf("Get(300): len %d cap %d", len(b), cap(b))
	}
	bytepool.Put(b)
	var s memkit.Stats
	bytepool.ReadStats(&s)
	if s.Grows < 1 || s.ReservedBytes < 320 || bytepool.Default().Policy() != bytepool.Elastic {
		t.Fatalf("default pool stats %+v", s)
	}
}

func TestCache_ReleaseFoldsStatsAndReturnsBuffers(t *testing.T) {
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		c := p.NewCache()
		var bufs [][]byte
		for i := 0; i < 100; i++ {
			bufs = append(bufs, c.Get(512))
		}
		for _, b := range bufs {
			c.Put(b)
		}
		c.Release()
		s := readStats(p)
		if s.Allocs != 100 || s.Frees != 100 || s.LiveObjects != 0 {
			t.Fatalf("after Release: %+v", s)
		}
		var idle uint64
		for _, row := range s.Classes {
			if row.Size == 512 {
				idle = row.IdleObjects
			}
		}
		if idle < 100 && !checked.Enabled { // else the quarantine holds them
			t.Fatalf("512-byte class idle = %d after Release; want >= 100", idle)
		}
		// A buffer from a Cache can go back to the pool, and the other way.
		b := c.Get(512)
		p.Put(b)
		c.Put(p.Get(512))
		c.Release()
		if s := readStats(p); s.LiveObjects != 0 || s.Allocs != s.Frees {
			t.Fatalf("after mixing Cache and Pool: %+v", s)
		}
	})
}

func TestStats_String(t *testing.T) {
	p := mustNew(t, bytepool.WithMaxSize(128), bytepool.WithClassesPerDoubling(1), bytepool.WithExactStats())
	b := p.Get(100)
	p.Put(p.Get(10))
	s := readStats(p)
	got := s.String()
	for _, want := range []string{
		"in use 128B  reserved 192B  live 1  allocs 2  frees 1",
		"     class       in use     reserved    live    idle      allocs       frees   grows  releases\n",
		"       64B           0B          64B       0       1           1           1       1         0\n",
		"      128B         128B         128B       1       0           1           0       1         0\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("String() =\n%s\nmissing %q", got, want)
		}
	}
	p.Put(b)
}

func TestPolicy_String(t *testing.T) {
	if got := fmt.Sprint(bytepool.Elastic, bytepool.Bounded, bytepool.Policy(9)); got != "Elastic Bounded Policy(9)" {
		t.Fatalf("got %q", got)
	}
}

var _ = errors.New

func TestPool_ManyClassesHaveNoTable(t *testing.T) {
	// Over 256 classes the lookup table is off: every size takes the
	// arithmetic path, through the Pool and a Cache.
	p := mustNew(t, bytepool.WithMinSize(512), bytepool.WithClassesPerDoubling(64), bytepool.WithExactStats())
	if n := len(p.Classes()); n <= 256 {
		t.Fatalf("%d classes; the test needs more than 256", n)
	}
	c := p.NewCache()
	for _, n := range []int{0, 1, 512, 520, 4096, 1 << 20} {
		for _, gp := range []struct {
			get func(int) []byte
			put func([]byte)
		}{{p.Get, p.Put}, {c.Get, c.Put}} {
			b := gp.get(n)
			if len(b) != n || cap(b) != p.ClassSize(n) {
				t.Fatalf("Get(%d): len %d cap %d; want cap %d", n, len(b), cap(b), p.ClassSize(n))
			}
			gp.put(b)
		}
	}
	c.Release()
	if s := readStats(p); s.LiveObjects != 0 || s.BadFrees != 0 || s.Allocs != 12 {
		t.Fatalf("stats %v", &s)
	}
}

func TestPool_HugeSizesAreMemkitErrors(t *testing.T) {
	// A Bounded budget inside the documented range but past the machine's
	// memory is an error, not the runtime's fatal out of memory.
	if mem := bytepool.MachineMemory(); mem > 0 && mem < 1<<46 && math.MaxInt > 1<<32 {
		_, err := bytepool.New(bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(1<<46))
		if err == nil || !strings.HasPrefix(err.Error(), "memkit/bytepool: WithBudget(70368744177664): a Bounded pool's region is more than this machine's memory") {
			t.Fatalf("New(Bounded, Budget 1<<46) = %v", err)
		}
	}
	_, err := bytepool.New(bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(1<<48))
	if want := "memkit/bytepool: WithBudget(281474976710656): a Bounded pool's region must be between 64KiB and 128TiB"; math.MaxInt > 1<<32 && (err == nil || err.Error() != want) {
		t.Fatalf("New(Bounded, Budget 1<<48) = %v; want %q", err, want)
	}
	// Get past what make can serve panics with a memkit message.
	if math.MaxInt < 1<<62 {
		return // 32-bit: an int cannot say 1<<62
	}
	u := uint64(1) << 62
	huge := int(u) // written so that 32-bit platforms, which returned above, compile it
	p := mustNew(t)
	msg := memtest.PanicOf(func() { p.Get(huge) })
	if !strings.HasPrefix(msg, "memkit/bytepool: size 4611686018427387904 is more than the machine can allocate now") {
		t.Fatalf("Get(1<<62) panicked %q", msg)
	}
	if msg := memtest.PanicOf(func() { bytepool.Get(huge) }); !strings.HasPrefix(msg, "memkit/bytepool: size") {
		t.Fatalf("bytepool.Get(1<<62) panicked %q", msg)
	}
}

func TestNew_NilOptionAndAlertThresholdAreErrors(t *testing.T) {
	fn := func(int64, bool) {}
	for _, tc := range []struct {
		opts []bytepool.Option
		want string
	}{
		{[]bytepool.Option{nil}, "memkit/bytepool: option 0 is nil"},
		{[]bytepool.Option{bytepool.WithZeroing(), nil}, "memkit/bytepool: option 1 is nil"},
		{[]bytepool.Option{bytepool.WithBudgetAlert(-1, fn)}, "memkit/bytepool: WithBudgetAlert(-1, fn): the threshold must be > 0 bytes"},
		{[]bytepool.Option{bytepool.WithBudgetAlert(0, fn), bytepool.WithPolicy(bytepool.Bounded)}, "memkit/bytepool: WithBudgetAlert(0, fn): the threshold must be > 0 bytes"},
		{[]bytepool.Option{bytepool.WithBudgetAlert(0, nil)}, "memkit/bytepool: WithBudgetAlert(0, fn): the threshold must be > 0 bytes"},
		{[]bytepool.Option{bytepool.WithBudgetAlert(10, nil)}, "memkit/bytepool: WithBudgetAlert(10, nil): fn is nil; leave the option out for no alert"},
	} {
		if p, err := bytepool.New(tc.opts...); p != nil || err == nil || err.Error() != tc.want {
			t.Errorf("New = %v, %v; want %q", p, err, tc.want)
		}
	}
}

func TestElastic_MovedStartOffTheHeapAlignmentIsBadFree(t *testing.T) {
	// With classes 8 bytes apart, b[8:] of a 64-byte buffer has the 56-byte
	// class's capacity, but every heap buffer of 16 bytes or more starts on
	// a 16-byte boundary: the release build drops and counts it. A move by
	// 16 keeps the alignment and is filed (the docs say so; the checked
	// build reports it).
	releaseOnly(t)
	p := mustNew(t, bytepool.WithExactStats(), bytepool.WithMinSize(32), bytepool.WithClassesPerDoubling(4))
	b := p.Get(64)
	p.Put(b[8:])
	if s := readStats(p); s.BadFrees != 1 || s.Frees != 0 {
		t.Fatalf("a start moved by 8 bytes into the 56-byte class: %v", &s)
	}
	c := p.NewCache()
	c.Put(b[8:])
	if s := readStats(p); s.BadFrees != 2 {
		t.Fatalf("the same through a Cache: %v", &s)
	}
	p.Put(b)
}

func TestPool_ReadStatsWhileInUse(t *testing.T) {
	// ReadStats from another goroutine, as memkit.Publish and the
	// Prometheus collector call it, while the owners Get and Put: the race
	// detector must see nothing, and the figures stay sane.
	forEachPolicy(t, func(t *testing.T, p *bytepool.Pool) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := p.NewCache()
				defer c.Release()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					n := 1 + (i*977+w*31)%9000
					p.Put(p.Get(n))
					c.Put(c.Get(n))
				}
			}()
		}
		var s memkit.Stats
		for range 200 {
			p.ReadStats(&s)
			if s.ReservedBytes < s.InUseBytes && p.Policy() == bytepool.Bounded {
				t.Errorf("reserved %d < in use %d", s.ReservedBytes, s.InUseBytes)
			}
		}
		close(stop)
		wg.Wait()
		p.ReadStats(&s)
		if s.LiveObjects != 0 || s.BadFrees != 0 {
			t.Fatalf("after the owners stopped: %v", &s)
		}
	})
}

func TestElastic_SampledInUseFollowsAModel(t *testing.T) {
	// The in-use estimate of an Elastic pool counts 1 buffer in 64 and
	// scales by 64: check it against the true count at several points of a
	// workload, within 6 standard deviations (8·sqrt(L) each), and that it
	// is exactly 0, never below, once everything is back.
	p := mustNew(t)
	scale := p.SampleScale()
	if scale != 64 {
		t.Fatalf("sample scale %d; want 64", scale)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var live [][]byte
	check := func(when string) {
		t.Helper()
		s := readStats(p)
		l := float64(len(live))
		tol := 6 * 8 * math.Sqrt(l)
		if got := float64(s.LiveObjects); math.Abs(got-l) > tol || s.LiveObjects%scale != 0 {
			t.Fatalf("%s: estimated %d live; true %d (tolerance %.0f)", when, s.LiveObjects, len(live), tol)
		}
		t.Logf("%s: estimated %d live; true %d (error %+.1f%%)", when, s.LiveObjects, len(live), 100*(float64(s.LiveObjects)-l)/l)
		var inUse uint64
		for _, row := range s.Classes {
			if row.InUseBytes != row.LiveObjects*row.Size {
				t.Fatalf("%s: class %d in use %d for %d live", when, row.Size, row.InUseBytes, row.LiveObjects)
			}
			inUse += row.InUseBytes
		}
		if inUse != s.InUseBytes {
			t.Fatalf("%s: rows sum to %d in use; total %d", when, inUse, s.InUseBytes)
		}
	}
	for range 40000 {
		live = append(live, p.Get(1+rng.IntN(2000)))
	}
	check("after 40000 Gets")
	for i := 0; i < 20000; i++ {
		j := rng.IntN(len(live))
		p.Put(live[j])
		live[j] = live[len(live)-1]
		live = live[:len(live)-1]
	}
	check("after 20000 Puts")
	for _, b := range live {
		p.Put(b)
	}
	live = nil
	if s := readStats(p); s.LiveObjects != 0 || s.InUseBytes != 0 {
		t.Fatalf("after every buffer came back: %v", &s)
	}
}

func TestPool_KeepAndReuse(t *testing.T) {
	releaseOnly(t) // the checked build keeps nothing: Keepable reports false
	p := mustNew(t, bytepool.WithExactStats())
	k := keep.Of(p)
	b := p.Get(1000)
	if !k.Keepable(b) {
		t.Fatal("Keepable refused a class buffer of an Elastic pool")
	}
	k.Keep(b)
	k.Kept(b, k.InSample(b))
	if s := readStats(p); s.Allocs != 1 || s.Frees != 1 || s.LiveObjects != 0 {
		t.Fatalf("after Keep: %v", &s)
	}
	if k.Keepable(b) {
		t.Fatal("a kept buffer is Keepable again")
	}
	memtest.CheckPanic(t, "memkit/bytepool: double free", func() { p.Put(b) })
	if !k.Reuse(b) || [8]byte(b[:8]) != [8]byte{} {
		t.Fatal("Reuse of a kept buffer failed, or left its mark")
	}
	k.Reused(b, k.InSample(b))
	if s := readStats(p); s.Allocs != 2 || s.LiveObjects != 1 {
		t.Fatalf("after Reuse: %v", &s)
	}
	// A kept buffer written to after Keep is refused.
	k.Keep(b)
	b[:8][3] ^= 1
	if k.Reuse(b) {
		t.Fatal("Reuse of a buffer written after Keep succeeded")
	}
	// Keepable refuses what Keep cannot keep: the caller Puts instead.
	bounded := mustNew(t, bytepool.WithPolicy(bytepool.Bounded))
	if keep.Of(bounded).Keepable(bounded.Get(64)) || k.Keepable(p.Get(1<<20)) ||
		keep.Of(mustNew(t, bytepool.WithZeroing())).Keepable(p.Get(64)) {
		t.Fatal("Keepable took a buffer of a Bounded or zeroing pool, or past the lookup table")
	}
}
