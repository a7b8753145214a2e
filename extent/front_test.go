package extent_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

func mustShared(t testing.TB, opts ...extent.Option) *extent.Shared {
	t.Helper()
	s, err := extent.NewShared(opts...)
	if err != nil {
		t.Fatalf("NewShared: %v", err)
	}
	return s
}

// pick removes a live block of m that the next byte of ops names, checked,
// and returns it, or nil when none is live.
func pick(t testing.TB, ops *memtest.Ops, m *memtest.Model) []byte {
	t.Helper()
	if len(m.Live) == 0 {
		return nil
	}
	b, err := m.Remove(int(ops.Byte()) % len(m.Live))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// freeAll checks and frees every live block of m, and returns how many.
func freeAll(t testing.TB, m *memtest.Model, free func([]byte)) uint64 {
	t.Helper()
	n := uint64(0)
	for ; len(m.Live) > 0; n++ {
		b, err := m.Remove(0)
		if err != nil {
			t.Fatal(err)
		}
		free(b)
	}
	return n
}

// A Free of a chunk that the front cache holds idle again panics at the
// call, is counted, and leaves the chunk idle once: the next Mallocs hand
// it out once.
func TestShared_FreeOfAnIdleChunkPanics(t *testing.T) {
	s := mustShared(t)
	b := s.Malloc(100)
	s.Free(b)
	memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { s.Free(b) })
	memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { s.Free(b[10:20]) })
	x, y := s.Malloc(100), s.Malloc(100)
	if &x[0] == &y[0] {
		t.Fatal("one chunk handed out twice after a Free too many")
	}
	if st := readStats(s); st.BadFrees != 2 || st.LiveObjects != 2 {
		t.Fatalf("stats %v; want 2 bad frees, 2 live", &st)
	}
	s.Free(x)
	s.Free(y)
}

// Two goroutines freeing one chunk at the same instant: the window is
// between one's load of the chunk's slot and its store (see Shared), so
// either one panics with "double free" (it came after the other's store)
// or both pass and the chunk is idle twice. The test runs the race until
// both pass, in the release build (the checked build has no front cache),
// and checks that no panic is anything but "double free" and no Free
// corrupts the Shared's own state on the way (a nil dereference, a lock
// left held).
func TestShared_TwoFreesAtOnce(t *testing.T) {
	if checked.Enabled || race.Enabled {
		t.Skip("the checked build takes the lock; the race detector reports the race itself")
	}
	s := mustShared(t)
	caught := 0
	for range 2000 {
		b := s.Malloc(256)
		var wg sync.WaitGroup
		msgs := make([]string, 2)
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				msgs[g] = memtest.PanicOf(func() { s.Free(b) })
			}()
		}
		wg.Wait()
		for _, m := range msgs {
			switch m {
			case "":
			case panicDoubleFree:
				caught++
			default:
				t.Fatalf("two Frees at once: panic %q", m)
			}
		}
		if msgs[0] == "" && msgs[1] == "" {
			// Both passed: the chunk is idle twice. Drain those tickets so
			// that the test does not hand the chunk out twice itself.
			break
		}
	}
	if caught == 0 {
		t.Log("no Free came after the other's store")
	}
}

// A partial Free, FreeRest and a Free of a middle range of a front-cache
// chunk keep the Allocator's semantics: the rest stays allocated and
// intact, the parts may be freed in any order, a part freed twice panics,
// and at the end nothing is in use.
func TestShared_PartialFreesOfAFrontChunk(t *testing.T) {
	s := mustShared(t)
	m := memtest.NewModel(1)
	for _, n := range []int{100, 4000, 64 << 10} {
		if _, err := m.Add(s.Malloc(n)); err != nil {
			t.Fatal(err)
		}
	}
	b := s.Malloc(1000)
	memtest.Fill(b, 9)
	keep := s.FreeRest(b, 600)
	if err := memtest.Verify(keep, 9); err != nil {
		t.Fatal(err)
	}
	memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { s.Free(b[700:800]) })
	s.Free(keep[200:400])
	memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { s.Free(keep[300:350]) })
	s.Free(keep[400:])
	s.Free(keep[:200])
	memtest.WantMisuse(t, "extent", panicDoubleFree, "Free", checked.DoubleFree, func() { s.Free(keep[:1]) })
	if err := m.VerifyAll(); err != nil {
		t.Fatal(err)
	}
	// The chunk's class serves on: a whole Malloc and Free of its size.
	c := s.Malloc(1000)
	memtest.Fill(c, 3)
	if err := m.VerifyAll(); err != nil {
		t.Fatal(err)
	}
	s.Free(c)
	freeAll(t, m, s.Free)
	if st := readStats(s); st.InUseBytes != 0 || st.Allocs != 5 || st.Frees != 8 || st.BadFrees != 3 {
		t.Fatalf("stats %v; want nothing in use, 5 allocs, 8 frees, 3 bad frees", &st)
	}
}

// ReadStats's Allocs and Frees, counted per chunk on the fast paths, agree
// with a model of the calls once the goroutine pauses, and are never more
// than the model's while it runs; InUseBytes is the bytes of the chunks
// out, never more than ReservedBytes.
func TestShared_StatsAgainstAModel(t *testing.T) {
	s := mustShared(t)
	var allocs, frees uint64
	var held [][]byte
	for i := range 20000 {
		held = append(held, s.Malloc(64<<(i%11)))
		allocs++
		if len(held) > 40 || i%3 == 0 {
			k := (i * 7) % len(held)
			s.Free(held[k])
			frees++
			held = append(held[:k], held[k+1:]...)
		}
		if i%1000 == 0 {
			if st := readStats(s); st.Allocs != allocs || st.Frees != frees || st.InUseBytes > st.ReservedBytes {
				t.Fatalf("after %d Mallocs and %d Frees: %v", allocs, frees, &st)
			}
		}
	}
	for _, b := range held {
		s.Free(b)
		frees++
	}
	if st := readStats(s); st.Allocs != allocs || st.Frees != frees || st.LiveObjects != 0 || st.InUseBytes != 0 {
		t.Fatalf("model: %d Mallocs, %d Frees; stats %v", allocs, frees, &st)
	}
}

// The chunks the front cache holds idle go back to their Allocators after
// GCs, by the sweep the GCs run, and Trim then gives the blocks back.
func TestShared_IdleChunksGoBackAfterGCs(t *testing.T) {
	s := mustShared(t, extent.WithBlockSize(64<<10))
	var bufs [][]byte
	for i := range 256 {
		bufs = append(bufs, s.Malloc(100+i*50))
	}
	for _, b := range bufs {
		s.Free(b)
	}
	s.Trim()
	if checked.Enabled {
		t.Skip("the checked build has no front cache")
	}
	if race.Enabled {
		t.Skip("under the race detector the idle sets keep their chunks")
	}
	if st := readStats(s); st.ReservedBytes == 0 || st.InUseBytes != 0 {
		t.Fatalf("right after the Frees: %v; want the chunks held, nothing in use", &st)
	}
	gcs := 0
	for ; gcs < 100 && readStats(s).ReservedBytes != 0; gcs++ {
		runtime.GC()
		runtime.Gosched() // let the cleanup goroutine run
		s.Trim()
	}
	if st := readStats(s); st.ReservedBytes != 0 || st.Releases != st.Grows {
		t.Fatalf("after %d GCs: %v", gcs, &st)
	}
	t.Logf("the blocks went back after %d GCs", gcs)
}

// skipUnlessChunksGoBack skips a test of how a Shared gives idle chunks
// back where it does not: without a front cache (the checked build), or
// with idle sets that keep their chunks (the race detector's).
func skipUnlessChunksGoBack(t *testing.T) {
	t.Helper()
	if checked.Enabled {
		t.Skip("the checked build has no front cache")
	}
	if race.Enabled {
		t.Skip("under the race detector the idle sets keep their chunks")
	}
}

// A warm class survives GCs: a chunk in use between GCs keeps its ticket
// (a GC moves the sync.Pool's items to its victim cache, where the next Get
// finds them), so neither the GC nor the sweep after it makes its class
// carve a segment again or make a ticket. On one P, so that the Get after
// the GC runs on the P whose victim cache holds the ticket (on another P
// it would not find it: see TestShared_GCOnAnotherP).
func TestShared_WarmClassSurvivesGC(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build has no front cache")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, n := range []int{16, 4 << 10, 64 << 10} {
		s := mustShared(t)
		s.Free(s.Malloc(n))
		segs, tickets := s.FrontCarves()
		if segs != 1 || tickets != 1 {
			t.Fatalf("size %d: %d segments, %d tickets after one Malloc; want 1, 1", n, segs, tickets)
		}
		for gc := 1; gc <= 5; gc++ {
			runtime.GC()
			s.Sweep() // as the hook does; the hook may run too
			b := s.Malloc(n)
			b[0] = byte(gc)
			s.Free(b)
			if g, k := s.FrontCarves(); g != segs || k != tickets {
				t.Fatalf("size %d, after GC %d: %d segments, %d tickets; want %d, %d (no carve, no ticket made again)",
					n, gc, g, k, segs, tickets)
			}
			if idle, out, _, _ := s.FrontAccount(); idle != 1 || out != 0 {
				t.Fatalf("size %d, after GC %d: %d chunks idle, %d out; want 1, 0", n, gc, idle, out)
			}
		}
	}
}

// An idle chunk goes back to its Allocator at the first sweep after its
// ticket's cleanup has run: the second GC after its Free drops the ticket
// (one GC moves it to the sync.Pool's victim cache, the next drops it), so
// the chunk is back by the sweep after the second or, when the cleanup
// runs after that sweep, the third GC. Here the test waits for the cleanup
// and sweeps itself, and Trim (twice: its hysteresis) then releases the
// block: after one GC the chunk is still idle in the front cache, after
// two it is gone.
func TestShared_IdleChunkGoesBackAfterTwoGCs(t *testing.T) {
	skipUnlessChunksGoBack(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := mustShared(t)
	s.Free(s.Malloc(64 << 10)) // one chunk, its segment's only one
	runtime.GC()
	s.Sweep()
	if idle, _, _, gone := s.FrontAccount(); idle != 1 || gone != 0 {
		t.Fatalf("after one GC: %d idle, %d gone; want 1, 0", idle, gone)
	}
	if st := readStats(s); st.ReservedBytes == 0 {
		t.Fatalf("after one GC: %v; want the chunk's block held", &st)
	}
	runtime.GC()
	// The cleanup of the dropped ticket runs on the runtime's cleanup
	// goroutine: yield to it (no sleep), at most 1000 times.
	for i := 0; i < 1000 && s.FrontRecovered() == 0; i++ {
		runtime.Gosched()
	}
	if r := s.FrontRecovered(); r != 1 {
		t.Fatalf("after two GCs %d tickets recovered; want 1", r)
	}
	s.Sweep()
	// Gone, and its segment, with no chunk left, out of the front cache.
	if idle, out, detached, gone := s.FrontAccount(); idle+out+detached+gone != 0 {
		t.Fatalf("after two GCs and a sweep: %d idle, %d out, %d detached, %d gone; want the segment dropped",
			idle, out, detached, gone)
	}
	s.Trim() // its hysteresis: the peak since the last Trim was the segment
	s.Trim()
	if st := readStats(s); st.ReservedBytes != 0 || st.InUseBytes != 0 {
		t.Fatalf("after two GCs and two Trims: %v; want nothing reserved", &st)
	}
}

// A GC that moves a goroutine to another P may cost its warm class a
// carve: the GC moves each P's sync.Pool items to that P's victim cache,
// and a Get on another P cannot take the item a P kept as its private one,
// so the Malloc after the GC finds no idle chunk and carves a segment (on
// 2 Ps, in about a third of the GCs of this test). The chunk left behind
// is idle, and goes back like any other: after churning through GCs on
// every P, two GCs without a Malloc give every chunk back and Trim every
// block.
func TestShared_GCOnAnotherP(t *testing.T) {
	skipUnlessChunksGoBack(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, n := range []int{64, 64 << 10} {
		s := mustShared(t)
		const gcs = 50
		for range gcs {
			b := s.Malloc(n)
			b[0] = 1
			s.Free(b)
			runtime.GC()
		}
		segs, tickets := s.FrontCarves()
		// Idle now: every ticket is dropped within two GCs and its cleanup
		// brings the chunk back for the sweep. Yield (no sleep) for the
		// cleanups, at most 10 GCs and 1000 yields each.
		for i := 0; i < 10 && s.FrontRecovered() < tickets; i++ {
			runtime.GC()
			for j := 0; j < 1000 && s.FrontRecovered() < tickets; j++ {
				runtime.Gosched()
			}
		}
		if r := s.FrontRecovered(); r != tickets {
			t.Fatalf("size %d: %d of %d tickets recovered", n, r, tickets)
		}
		s.Sweep()
		if idle, out, detached, gone := s.FrontAccount(); idle+out+detached+gone != 0 {
			t.Fatalf("size %d: idle, after the sweep: %d idle, %d out, %d detached, %d gone; want none",
				n, idle, out, detached, gone)
		}
		s.Trim()
		s.Trim()
		if st := readStats(s); st.ReservedBytes != 0 || st.InUseBytes != 0 || st.Allocs != gcs || st.Frees != gcs {
			t.Fatalf("size %d: idle, after two Trims: %v; want nothing reserved, %d Mallocs and Frees", n, &st, gcs)
		}
		t.Logf("size %d: %d GCs on 2 Ps, %d segments carved, %d tickets made", n, gcs, segs, tickets)
	}
}

// Close drops the front cache with the blocks; the Shared serves on.
func TestShared_CloseAndServeOn(t *testing.T) {
	s := mustShared(t)
	a := s.Malloc(500)
	s.Free(s.Malloc(500))
	s.Close()
	if st := readStats(s); st.ReservedBytes != 0 || st.InUseBytes != 0 {
		t.Fatalf("after Close: %v", &st)
	}
	_ = a // invalid now, as every Malloc before Close
	m := memtest.NewModel(2)
	for range 100 {
		if _, err := m.Add(s.Malloc(500)); err != nil {
			t.Fatal(err)
		}
	}
	freeAll(t, m, s.Free)
	if st := readStats(s); st.InUseBytes != 0 || st.Allocs != 102 || st.Frees != 101 {
		t.Fatalf("after Close and 100 more: %v", &st)
	}
}

// A warm Malloc and Free of every front size, and of one past it, do not
// allocate.
func TestShared_MallocFreeZeroAllocs(t *testing.T) {
	if race.Enabled || checked.Enabled {
		t.Skip("allocation counts are not certain under the race detector; the checked build records stacks")
	}
	s := mustShared(t)
	for _, n := range []int{1, 64, 100, 4096, 40000, 64 << 10, 64<<10 + 1} {
		s.Free(s.Malloc(n))
		if got := testing.AllocsPerRun(100, func() { s.Free(s.Malloc(n)) }); got != 0 {
			t.Errorf("Malloc(%d)+Free: %v allocs", n, got)
		}
	}
}

// FuzzShared decodes the input into a Shared's Malloc, TryMalloc, whole
// Free, partial Free, FreeRest, Trim and Free of a range freed before,
// sizes in and past the front cache's, and checks them against a model: no
// two live ranges overlap, every byte written reads back until freed, a
// Free of a range no byte of which is live panics with "double free" (or
// "foreign memory" once Trim gave its block back), then makes the misuse
// table's other mistakes on the state left (makeSharedMistakes), and at the
// end the counts are the calls made and nothing is in use.
func FuzzShared(f *testing.F) {
	f.Add([]byte{0, 100, 0, 2, 0, 6, 0, 0, 100, 0, 4, 0, 3, 7, 5, 0, 6, 1})
	f.Add([]byte{0, 255, 255, 0, 16, 0, 1, 0, 1, 5, 0, 30, 3, 0, 60, 6, 0, 2, 0, 7, 6, 3})
	f.Fuzz(fuzzSharedBody)
}

func fuzzSharedBody(t *testing.T, data []byte) {
	{
		ops := memtest.NewOps(data)
		s := mustShared(t, extent.WithBlockSize(64<<10))
		defer s.Close()
		m := memtest.NewModel(0)
		var allocs, frees, bad uint64
		var freed [][]byte
		live := func(b []byte) bool {
			for i := range m.Live {
				if memtest.Overlap(m.Live[i].Buf, b) {
					return true
				}
			}
			return false
		}
		remember := func(b []byte) {
			if freed = append(freed, b); len(freed) > 8 {
				freed = freed[1:]
			}
		}
		add := func(b []byte, n int) {
			if addMalloc(t, m, b, n) {
				allocs++
			}
		}
		for ops.More() {
			op := ops.Byte() % 8
			if len(m.Live) >= 64 && op <= 1 {
				op = 2
			}
			switch op {
			case 0: // Malloc: mostly front sizes, some past them
				n := ops.Uint16() + int(ops.Byte()%3/2)*(64<<10)
				add(s.Malloc(n), n)
			case 1: // TryMalloc
				n := ops.Uint16() + int(ops.Byte()%3/2)*(64<<10)
				b, err := s.TryMalloc(n)
				if err != nil {
					t.Fatal(err)
				}
				add(b, n)
			case 2, 3: // Free a whole allocation
				b := pick(t, ops, m)
				if b == nil {
					continue
				}
				s.Free(b)
				frees++
				remember(b)
			case 4, 5: // Free a part (op 5: FreeRest); the rest stays live
				b := pick(t, ops, m)
				if b == nil {
					continue
				}
				i := int(ops.Byte()) % len(b)
				j := i + 1 + int(ops.Byte())%(len(b)-i)
				if op == 5 {
					j = len(b)
					if got := s.FreeRest(b, i); len(got) != i || cap(got) != i {
						t.Fatalf("FreeRest(%d bytes, %d): len %d cap %d", len(b), i, len(got), cap(got))
					}
				} else {
					s.Free(b[i:j])
				}
				frees++
				remember(b[i:j])
				for _, p := range [][]byte{b[:i:i], b[j:]} {
					if len(p) > 0 {
						if _, err := m.Add(p); err != nil {
							t.Fatal(err)
						}
					}
				}
			case 6: // Free again a range freed before, if no byte of it is live
				if len(freed) == 0 {
					continue
				}
				b := freed[int(ops.Byte())%len(freed)]
				if live(b) {
					continue
				}
				if checked.Enabled {
					if m, other := memtest.MisuseOf(func() { s.Free(b) }); m == nil || m.Kind != checked.DoubleFree && m.Kind != checked.ForeignFree {
						t.Fatalf("a second Free of %d bytes: misuse %v, panic %v", len(b), m, other)
					}
				} else {
					switch msg := memtest.PanicOf(func() { s.Free(b) }); msg {
					case panicDoubleFree, panicForeign:
					default:
						t.Fatalf("a second Free of %d bytes: panic %q", len(b), msg)
					}
				}
				bad++
			case 7:
				s.Trim()
			}
		}
		bad += makeSharedMistakes(t, s, m, freed)
		frees += freeAll(t, m, s.Free)
		if st := readStats(s); st.Allocs != allocs || st.Frees != frees || st.BadFrees != bad || st.InUseBytes != 0 {
			t.Fatalf("after %d Mallocs, %d Frees and %d bad ones: %v", allocs, frees, bad, &st)
		}
	}
}
