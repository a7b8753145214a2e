package bytepool_test

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
)

// TestBounded_StressGC: goroutines get buffers of a Bounded pool whose
// region holds 64 of them, tag every byte with their owner, hand some to
// each other and put them back, through forced GCs at GOGC=1 (a GC drops
// idle buffers' tickets, whose buffers come back through cleanups). No
// buffer is ever out to two owners (the tags read back), the region is
// never exceeded (what does not fit is a counted heap fallback), and after
// quiescence and GCs every carved buffer is idle and comes back, each
// once: free + live = carved.
func TestBounded_StressGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	const size, region, workers = 4 << 10, 256 << 10, 12
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(region), bytepool.WithMaxSize(size))
	handoff := make(chan []byte, 8)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tag := byte(w + 1)
			var held [][]byte
			for r := range rounds {
				b := p.Get(size)
				for i := range b {
					b[i] = tag
				}
				held = append(held, b)
				if r%5 == 0 {
					select {
					case handoff <- held[0]:
						held = held[1:]
					default:
					}
				}
				if r%200 == 0 {
					runtime.GC()
				}
				if len(held) > 3 || (len(held) > 0 && r%2 == 0) {
					b := held[0]
					held = held[1:]
					if bytes.Count(b, []byte{b[0]}) != len(b) {
						t.Errorf("a buffer holds two owners' bytes")
					}
					p.Put(b)
				}
				select {
				case o := <-handoff:
					if bytes.Count(o, []byte{o[0]}) != len(o) {
						t.Errorf("a handed-off buffer holds two owners' bytes")
					}
					p.Put(o)
				default:
				}
			}
			for _, b := range held {
				p.Put(b)
			}
		}()
	}
	wg.Wait()
	close(handoff)
	for b := range handoff {
		p.Put(b)
	}
	var st memkit.Stats
	p.ReadStats(&st)
	if st.LiveObjects != 0 || st.InUseBytes != 0 || st.ReservedBytes != region {
		t.Fatalf("after quiescence: live %d, in use %d, reserved %d; want 0, 0, %d", st.LiveObjects, st.InUseBytes, st.ReservedBytes, region)
	}
	// Every buffer the class carved is idle. How many it carved depends on
	// how many the workers held at once: a short run on two cores may never
	// need the whole region, and the TryGets below carve the rest.
	row := st.Classes[len(st.Classes)-1]
	if carved := row.ReservedBytes / size; row.Size != size || carved == 0 || row.IdleObjects != carved {
		t.Fatalf("class row %+v; want its %d carved buffers idle", row, carved)
	}
	// Take every buffer back: a TryGet that fails while some buffer's
	// ticket waits for the cleanup of the GC that dropped it is retried
	// after another GC.
	seen := map[uintptr]bool{}
	var got [][]byte
	for gcs := 0; len(seen) < region/size; gcs++ {
		if gcs == 100 {
			t.Fatalf("after 100 GCs %d of %d buffers came back", len(seen), region/size)
		}
		for {
			b, ok := p.TryGet(size)
			if !ok {
				break
			}
			at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
			if seen[at] {
				t.Fatalf("buffer %#x handed out twice", at)
			}
			seen[at] = true
			got = append(got, b)
		}
		runtime.GC()
		runtime.Gosched()
	}
	for _, b := range got {
		p.Put(b)
	}
	p.ReadStats(&st)
	if st.LiveObjects != 0 {
		t.Fatalf("live %d after the last Put", st.LiveObjects)
	}
}

// TestBounded_AllocsExact: a Bounded pool counts every Get in its
// buffer's slot, so its Allocs and Frees match a model of the calls made
// on several goroutines (each keeps a few buffers out at once, some of
// them from the heap once the region is used up), whatever the options.
func TestBounded_AllocsExact(t *testing.T) {
	for _, opts := range [][]bytepool.Option{nil, {bytepool.WithExactStats()}, {bytepool.WithZeroing()}} {
		p := mustNew(t, append(opts, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(64<<10))...)
		const workers, rounds = 4, 300
		var wg sync.WaitGroup
		var held [workers][]([]byte)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var out [][]byte
				for i := range rounds {
					out = append(out, p.Get(1000+w*3000))
					if i%7 == 6 { // put back all but one
						for _, b := range out[1:] {
							p.Put(b)
						}
						out = out[:1]
					}
				}
				held[w] = out
			}()
		}
		wg.Wait()
		var st memkit.Stats
		p.ReadStats(&st)
		live := uint64(0)
		for w := range workers {
			live += uint64(len(held[w]))
		}
		if st.Allocs != workers*rounds || st.Frees != workers*rounds-live || st.LiveObjects != live {
			t.Fatalf("stats %v; want allocs %d frees %d live %d", &st, workers*rounds, workers*rounds-live, live)
		}
	}
}

// TestBounded_StatsWhileChurning: a reader's snapshots, taken while
// goroutines get and put buffers through GCs, never show an impossible
// state: in use within reserved, live within what the region holds plus
// the fallbacks got, frees within allocs.
func TestBounded_StatsWhileChurning(t *testing.T) {
	const size, region, workers = 1 << 10, 128 << 10, 4
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(region), bytepool.WithMaxSize(size))
	var stop sync.WaitGroup
	done := make(chan struct{})
	for w := range workers {
		stop.Add(1)
		go func() {
			defer stop.Done()
			var held [][]byte
			for r := range 4000 {
				held = append(held, p.Get(1+(r*7+w)%size))
				if len(held) > 40 || r%3 == 0 {
					p.Put(held[0])
					held = held[1:]
				}
				if r%1000 == 0 {
					runtime.GC()
				}
			}
			for _, b := range held {
				p.Put(b)
			}
		}()
	}
	go func() { stop.Wait(); close(done) }()
	var st memkit.Stats
	for reads := 0; ; reads++ {
		select {
		case <-done:
			p.ReadStats(&st)
			if st.LiveObjects != 0 || st.InUseBytes != 0 || st.Frees != st.Allocs {
				t.Fatalf("after the workers: %+v", st)
			}
			return
		default:
		}
		p.ReadStats(&st)
		if st.InUseBytes > st.ReservedBytes || st.Frees > st.Allocs || st.Allocs-st.Frees != st.LiveObjects ||
			st.LiveObjects > region/64+st.HeapFallbacks {
			t.Fatalf("read %d: impossible %+v", reads, st)
		}
	}
}

// TestBounded_ConcurrentDoublePutWindow: two Puts of one buffer by two
// goroutines at the same instant, the window Put's doc states. Outside it
// (the Puts a few instructions apart) the second panics as a double free;
// inside it both may pass, and the buffer is then idle twice. The test
// pins what holds either way: at most one Put of each pair panics, and a
// second Put on one goroutine always does. Under the race detector the
// two Puts are reported as a data race, the detector's job.
func TestBounded_ConcurrentDoublePutWindow(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector reports two goroutines putting one buffer at once")
	}
	if checked.Enabled {
		t.Skip("the checked build's tracker serializes Puts and reports the second with its stacks")
	}
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(1<<20))
	for range 200 {
		b := p.Get(512)
		var panics atomic.Int32
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if memtest.PanicOf(func() { p.Put(b) }) != "" {
					panics.Add(1)
				}
			}()
		}
		wg.Wait()
		if panics.Load() == 2 {
			t.Fatal("both Puts of a buffer that was out panicked")
		}
	}
	b := p.Get(512)
	p.Put(b)
	memtest.CheckPanic(t, "memkit/bytepool: double free", func() { p.Put(b) })
}

// TestBounded_UnreachablePoolIsCollected: a Bounded pool's region is
// reserved whole at New and never given back while the pool lives; once
// the pool is unreachable the GC collects it with its region, though its
// tickets' cleanups and the tickets idle in the sync.Pools outlive it
// (they hold the pool's Idle weakly). In the checked build a buffer in
// the tracker's quarantine keeps its pool until the quarantine lets it go.
func TestBounded_UnreachablePoolIsCollected(t *testing.T) {
	releaseOnly(t)
	collected := make(chan struct{})
	func() {
		p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(1<<20))
		var out [][]byte
		for range 40 {
			out = append(out, p.Get(4000))
		}
		for _, b := range out {
			p.Put(b)
		}
		runtime.AddCleanup(p, func(ch chan struct{}) { close(ch) }, collected)
	}()
	for i := 0; ; i++ {
		runtime.GC()
		select {
		case <-collected:
			return
		default:
		}
		if i == 1000 {
			t.Fatal("an unreachable Bounded pool was not collected after 1000 GCs: something keeps its region alive")
		}
		runtime.Gosched() // let the cleanup goroutine run
	}
}

// TestBounded_RunClasses checks Put of the classes past the lookup table,
// whose runs span several slabs (the class is read from the slab, the
// offset tested in its run): every buffer of several runs comes back and is
// handed out again, none twice; a second Put panics; a slice whose start
// moved, and heap memory of a class's size, are never filed; and a Get and
// Put of 1 MiB allocate nothing.
func TestBounded_RunClasses(t *testing.T) {
	const size = 1 << 20
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(32<<20))
	for round := range 3 {
		var out [][]byte
		seen := map[*byte]bool{}
		for i := range 12 {
			b := p.Get(size)
			if len(b) != size || cap(b) != p.ClassSize(size) {
				t.Fatalf("round %d: Get(%d) = len %d cap %d", round, size, len(b), cap(b))
			}
			if seen[&b[0]] {
				t.Fatalf("round %d: buffer %d handed out twice", round, i)
			}
			seen[&b[0]] = true
			b[0], b[size-1] = byte(i), byte(i)
			out = append(out, b)
		}
		for i, b := range out {
			if b[0] != byte(i) || b[size-1] != byte(i) {
				t.Fatalf("round %d: buffer %d holds %d, %d", round, i, b[0], b[size-1])
			}
		}
		for _, b := range out {
			p.Put(b)
		}
	}
	var st memkit.Stats
	p.ReadStats(&st)
	if st.LiveObjects != 0 || st.Allocs != 36 || st.Frees != 36 || st.BadFrees != 0 {
		t.Fatalf("stats after 3 rounds of 12: %v", &st)
	}

	b := p.Get(size)
	p.Put(b)
	if checked.Enabled { // the checked build's report adds the address and the stacks
		if msg := memtest.PanicOf(func() { p.Put(b) }); !strings.HasPrefix(msg, "memkit/bytepool: Put: double free at ") {
			t.Fatalf("second Put: panic %q; want a double free report", msg)
		}
	} else {
		memtest.CheckPanic(t, "memkit/bytepool: double free", func() { p.Put(b) })
	}

	if checked.Enabled {
		return // the checked build panics at a bad free, which its own tests check
	}
	b = p.Get(size)
	p.Put(b[64:])                          // the start moved: a bad free, not filed
	p.Put(make([]byte, p.ClassSize(size))) // heap memory of the class's size: dropped
	p.ReadStats(&st)
	if st.BadFrees != 1 || st.LiveObjects != 1 {
		t.Fatalf("after a moved start and a heap buffer: %v", &st)
	}
	p.Put(b)
	if race.Enabled {
		return // -race drops sync.Pool Puts, so tickets are made again
	}
	if n := testing.AllocsPerRun(100, func() { p.Put(p.Get(size)) }); n != 0 {
		t.Fatalf("Get+Put of 1 MiB: %v allocations", n)
	}
}

// Two Ps' buffers must not share a slot line, which each Get and Put
// writes: a RunParallel Get+Put of 512 bytes ran 2-3.5x slower in one run
// in three when the tops of two carve batches (32 buffers, a quarter of
// the class's run) shared one. Within a one-slab run, slots are distinct,
// neighbours fall on different lines, and so do the tops of the batches.
func TestBounded_SlotLines(t *testing.T) {
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(64<<20))
	checkedRuns := 0
	for c, size := range p.Classes() {
		idx, nslots, oneSlab := p.SlotIndexes(c)
		if !oneSlab {
			continue
		}
		seen := map[uintptr]bool{}
		for i, s := range idx {
			if s >= uintptr(nslots) || seen[s] {
				t.Fatalf("class %d B: buffer %d's slot %d repeated or past %d", size, i, s, nslots)
			}
			seen[s] = true
		}
		if len(idx) < 8 {
			for i := 1; i < len(idx); i++ {
				if idx[i]/4 == idx[i-1]/4 {
					t.Errorf("class %d B (%d buffers): buffers %d and %d share a slot line", size, len(idx), i-1, i)
				}
			}
			continue
		}
		checkedRuns++
		for i := 1; i < len(idx); i++ {
			if idx[i]/4 == idx[i-1]/4 {
				t.Errorf("class %d B: neighbours %d and %d share a slot line", size, i-1, i)
			}
		}
		batch := bytepool.CarveBatch(size)
		lines := map[uintptr]int{}
		for top := batch - 1; top < len(idx); top += batch {
			if prev, ok := lines[idx[top]/4]; ok {
				t.Errorf("class %d B: the tops of carve batches, buffers %d and %d, share a slot line", size, prev, top)
			}
			lines[idx[top]/4] = top
		}
	}
	if checkedRuns == 0 {
		t.Fatal("no class with a rotated slot run")
	}
}

// TestBounded_SlotsStartLines checks that every class's run of slots
// starts a cache line and is whole lines, so that the lines
// TestBounded_SlotLines reasons about (slot index / 4) are the machine's:
// an array of slots of its own starts 8 bytes into a line (the Go heap's
// header), and then one slot in four straddled two lines.
func TestBounded_SlotsStartLines(t *testing.T) {
	p := mustNew(t, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(64<<20))
	for _, size := range p.Classes() {
		b := p.Get(size)
		first, nslots := p.RunSlots(b)
		if first%64 != 0 || nslots%4 != 0 {
			t.Errorf("class %d B: its run's %d slots start at %#x, %d bytes into a cache line; want a line's start and whole lines", size, nslots, first, first%64)
		}
		p.Put(b)
	}
}
