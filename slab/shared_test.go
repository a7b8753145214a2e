package slab_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/slab"
)

func mustShared(t testing.TB, start, slabSize int, opts ...slab.Option) *slab.Shared {
	t.Helper()
	sh, err := slab.NewShared(start, slabSize, 2, nil, opts...)
	if err != nil {
		t.Fatalf("NewShared: %v", err)
	}
	return sh
}

func sharedStats(sh *slab.Shared) memkit.Stats {
	var s memkit.Stats
	sh.ReadStats(&s)
	return s
}

func TestNewShared_InvalidParams(t *testing.T) {
	for _, tc := range []struct {
		opts []slab.Option
		want string
	}{
		{[]slab.Option{slab.WithShards(-1)}, "memkit/slab: Shards -1 must be between 1 and 256"},
		{[]slab.Option{slab.WithShards(257)}, "memkit/slab: Shards 257 must be between 1 and 256"},
		{[]slab.Option{slab.WithIdleSlabs(-2)}, "memkit/slab: IdleSlabs -2 must be >= 0"},
		{[]slab.Option{slab.WithShards(2), nil}, "memkit/slab: option 2 of 2 is nil"},
	} {
		if _, err := slab.NewShared(64, 1024, 2, nil, tc.opts...); err == nil || err.Error() != tc.want {
			t.Errorf("NewShared error %v; want %q", err, tc.want)
		}
	}
	if _, err := slab.NewArena(64, 1024, 2, nil, nil); err == nil || err.Error() != "memkit/slab: option 1 of 1 is nil" {
		t.Errorf("NewArena with a nil option: %v", err)
	}
	if _, err := slab.NewShared(64, 1024, 1, nil); err == nil || err.Error() != "memkit/slab: growthFactor 1 must be greater than 1" {
		t.Errorf("NewShared growth 1: %v", err)
	}
	if sh := mustShared(t, 64, 1024, slab.WithShards(5)); sh.Shards() != 8 {
		t.Errorf("WithShards(5) gave %d shards; want 8", sh.Shards())
	}
}

func TestShared_Misuse(t *testing.T) {
	sh := mustShared(t, 64, 1024, slab.WithShards(4))
	keep := sh.AllocOn(0, 64)
	b := sh.AllocOn(0, 64)
	loc := sh.BufToLoc(b)
	if !sh.DecRef(b) {
		t.Fatal("DecRef of the only reference")
	}
	if checked.Enabled { // the report names this test's Alloc and DecRef
		m, _ := memtest.MisuseOf(func() { sh.DecRef(b) })
		memtest.CheckMisuse(t, m, "slab", "DecRef", checked.DoubleFree, "TestShared_Misuse", true)
	} else {
		memtest.CheckPanic(t, "memkit/slab: DecRef of a free chunk", func() { sh.DecRef(b) })
	}
	wantMisuse(t, "memkit/slab: stale handle", "LocToBuf", checked.StaleHandle, func() { sh.LocToBuf(loc) })
	wantMisuse(t, "memkit/slab: stale handle", "LocDecRef", checked.StaleHandle, func() { sh.LocDecRef(loc) })
	foreign := make([]byte, 64)
	wantMisuse(t, "memkit/slab: buffer not allocated by this arena", "DecRef", checked.ForeignFree, func() { sh.DecRef(foreign) })
	memtest.CheckPanic(t, "memkit/slab: buffer not allocated by this arena", func() { sh.AddRef(foreign) })
	memtest.CheckPanic(t, "memkit/slab: negative size", func() { sh.Alloc(-1) })
	if sh.Owns(foreign) || sh.Owns(nil) || sh.Owns(b) || !sh.Owns(keep) {
		t.Fatal("Owns is wrong")
	}
	if sh.Alloc(2000) != nil || sh.ClassSize(100) != 128 || sh.ClassSize(2000) != 0 {
		t.Fatal("sizes are wrong")
	}
	// The shard is still usable after the panics: its lock was released.
	slab.PublishStats(sh)
	if s := sharedStats(sh); s.BadFrees != 3 || s.LiveObjects != 1 || s.Failures != 1 {
		t.Fatalf("stats %v", &s)
	}
	sh.DecRef(keep)
}

func TestShared_ChainAcrossShards(t *testing.T) {
	sh := mustShared(t, 64, 1024, slab.WithShards(4), slab.WithIdleSlabs(0))
	var bufs [][]byte
	for i := range 12 {
		bufs = append(bufs, sh.AllocOn(i%4, 100))
	}
	for i := 1; i < len(bufs); i++ {
		sh.SetNext(bufs[i-1], bufs[i])
		sh.DecRef(bufs[i])
	}
	n := 0
	for b := bufs[0]; b != nil; n++ {
		next := sh.GetNext(b)
		if n > 0 {
			sh.DecRef(b)
		}
		b = next
	}
	if n != 12 {
		t.Fatalf("chain of %d; want 12", n)
	}
	if !sh.DecRef(bufs[0]) {
		t.Fatal("the head was not freed")
	}
	sh.FlushQuarantine()
	if s := sharedStats(sh); s.LiveObjects != 0 || s.ReservedBytes != 0 || sh.IndexLen() != 0 {
		t.Fatalf("after dropping the head: index %d, %v", sh.IndexLen(), &s)
	}
}

// TestShared_ManyGoroutines runs model-checked goroutines on one Shared
// arena under the race detector, each freeing some of its buffers on
// another goroutine, and checks no two live chunks overlap and the stats.
func TestShared_ManyGoroutines(t *testing.T) {
	sh := mustShared(t, 64, 8<<10)
	const workers, rounds = 4, 2000
	models := make([]*memtest.Model, workers)
	handoff := make(chan []byte, 64)
	var wg, fw sync.WaitGroup
	fw.Add(1)
	go func() { // frees buffers allocated on other goroutines
		defer fw.Done()
		for b := range handoff {
			sh.DecRef(b)
		}
	}()
	errs := make([]error, workers)
	for w := range workers {
		models[w] = memtest.NewModel(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := models[w]
			for i := range rounds {
				n := 1 + (i*131+w*17)%3000
				b := sh.Alloc(n)
				if len(b) != n {
					errs[w] = fmt.Errorf("Alloc(%d) = %d bytes", n, len(b))
					return
				}
				if _, err := m.Add(b); err != nil {
					errs[w] = err
					return
				}
				if len(m.Live) > 32 {
					old, err := m.Remove(i % len(m.Live))
					if err != nil {
						errs[w] = err
						return
					}
					if i%3 == 0 {
						handoff <- old
					} else {
						sh.DecRef(old)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(handoff)
	fw.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := memtest.CheckDisjoint(models...); err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, m := range models {
		live += len(m.Live)
	}
	s := sharedStats(sh)
	if s.LiveObjects != uint64(live) || s.Allocs != workers*rounds || s.Frees != uint64(workers*rounds-live) {
		t.Fatalf("stats %v; model live %d", &s, live)
	}
	for _, m := range models {
		for len(m.Live) > 0 {
			b, err := m.Remove(0)
			if err != nil {
				t.Fatal(err)
			}
			sh.DecRef(b)
		}
	}
}

func TestShared_HotPathsDoNotAllocate(t *testing.T) {
	skipIfChecked(t, "it records every allocation")
	sh := mustShared(t, 64, 1<<20)
	keep := sh.Alloc(512)
	var s memkit.Stats
	sh.ReadStats(&s)
	for name, f := range map[string]func(){
		"Alloc+DecRef":      func() { sh.DecRef(sh.Alloc(512)) },
		"BufToLoc+LocToBuf": func() { _ = sh.LocToBuf(sh.BufToLoc(keep)) },
		"ReadStats":         func() { sh.ReadStats(&s) },
		"SetNext":           func() { sh.SetNext(keep, nil) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocs; want 0", name, n)
		}
	}
}

// FuzzShared runs the arena model of FuzzArena on one to three goroutines
// sharing one Shared arena, each with its own model, and checks that no
// two live chunks of any goroutine overlap and that the summed stats agree.
func FuzzShared(f *testing.F) {
	f.Add([]byte{0, 0, 10, 0, 0, 20, 0, 2, 0, 3, 0, 3, 1})
	f.Add([]byte{0x41, 0, 64, 0, 0, 64, 0, 0, 64, 0, 5, 0, 1, 5, 1, 2, 3, 0, 3, 0, 3, 0, 7, 0, 8, 0})
	f.Add([]byte{0x92, 1, 255, 15, 0, 1, 0, 6, 0, 9, 0, 4, 0, 7, 0, 8, 0, 10, 11, 12, 1, 2, 3, 4, 5, 6})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := memtest.NewOps(data)
		cfg := ops.Byte()
		slabSize := 512 << (cfg >> 4 & 3)
		sh, err := slab.NewShared(8+int(cfg&0x0F)*4, slabSize, 2, nil,
			slab.WithIdleSlabs(int(cfg&3)), slab.WithShards(1<<(cfg>>6)))
		if err != nil {
			t.Fatal(err)
		}
		workers := 1 + int(cfg>>2)%3
		streams := ops.Split(workers, 12)
		models := make([]*arenaModel, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			models[w] = &arenaModel{a: sh, shared: true, mem: memtest.NewModel(w), sizes: map[*mchunk]int{}}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[w] = models[w].run(streams[w], slabSize)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var mems []*memtest.Model
		var want arenaModel
		var live int
		for _, m := range models {
			mems = append(mems, m.mem)
			want.allocs += m.allocs
			want.frees += m.frees
			want.failures += m.failures
			want.badFrees += m.badFrees
			live += len(m.live)
			if err := m.check(); err != nil {
				t.Fatal(err)
			}
		}
		if err := memtest.CheckDisjoint(mems...); err != nil {
			t.Fatal(err)
		}
		s := sharedStats(sh)
		if s.Allocs != want.allocs || s.Frees != want.frees || s.Failures != want.failures ||
			s.BadFrees != want.badFrees || s.LiveObjects != uint64(live) {
			t.Fatalf("stats %v\nmodels: allocs %d frees %d failures %d bad frees %d live %d",
				&s, want.allocs, want.frees, want.failures, want.badFrees, live)
		}
	})
}

// statsWatcher calls read in a loop on another goroutine, as memkit.Publish
// and the Prometheus collector do, until stop is closed, and reports the
// first snapshot that could not have come from the arena: a counter that
// went back, more frees than allocs, more live chunks than allocs less
// frees, or more bytes in use than reserved.
func statsWatcher(read func(*memkit.Stats), stop <-chan struct{}) <-chan error {
	done := make(chan error, 1)
	go func() {
		var s, prev memkit.Stats
		for n := 0; ; n++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			read(&s)
			switch {
			case s.Allocs < prev.Allocs || s.Frees < prev.Frees || s.Grows < prev.Grows:
				done <- fmt.Errorf("read %d: a counter went back: %v after %v", n, &s, &prev)
				return
			case s.Frees > s.Allocs || s.LiveObjects > s.Allocs-s.Frees || s.InUseBytes > s.ReservedBytes:
				done <- fmt.Errorf("read %d: inconsistent %v", n, &s)
				return
			}
			prev.Allocs, prev.Frees, prev.Grows = s.Allocs, s.Frees, s.Grows
		}
	}()
	return done
}

// churn makes n Allocs of sizes up to 700 bytes and DecRefs most of them,
// oldest first, and returns those it kept.
func churn(alloc func(int) []byte, decRef func([]byte) bool, n int) [][]byte {
	var held [][]byte
	for i := range n {
		held = append(held, alloc(i%700))
		if len(held) > 50 || i%3 == 0 {
			decRef(held[0])
			held = held[1:]
		}
	}
	return held
}

// ReadStats may be called from any goroutine while the owner allocates and
// frees: run with -race.
func TestArena_ReadStatsFromAnotherGoroutine(t *testing.T) {
	a := mustArena(t, 64, 4096, 2, slab.WithIdleSlabs(0))
	stop := make(chan struct{})
	done := statsWatcher(a.ReadStats, stop)
	held := churn(a.Alloc, a.DecRef, 20000)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, b := range held {
		a.DecRef(b)
	}
	if s := readStats(a); s.LiveObjects != 0 || s.Allocs != 20000 || s.Frees != 20000 {
		t.Fatalf("after every DecRef: %v", &s)
	}
}

func TestShared_ReadStatsFromAnotherGoroutine(t *testing.T) {
	sh := mustShared(t, 64, 4096)
	stop := make(chan struct{})
	done := statsWatcher(sh.ReadStats, stop)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, b := range churn(sh.Alloc, sh.DecRef, 10000) {
				sh.DecRef(b)
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	slab.PublishStats(sh)
	if s := sharedStats(sh); s.LiveObjects != 0 || s.Allocs != 20000 || s.Frees != 20000 {
		t.Fatalf("after every DecRef: %v", &s)
	}
}

// TestShared_Stress runs many goroutines that Alloc, tag, hand over, AddRef
// and DecRef chunks of a Shared while GCs run (GOGC=1 and forced ones), in
// every build. Each chunk carries its owner's tag at both ends, checked
// before every DecRef, so a chunk handed out twice shows; once the
// goroutines stop and two GCs ran, every chunk the shards carved for the
// idle sets must be idle in them, each once, or live.
func TestShared_Stress(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	sh := mustShared(t, 64, 16<<10, slab.WithIdleSlabs(0))
	workers, rounds := 16, 4000
	if race.Enabled || checked.Enabled {
		rounds = 800
	}
	type held struct {
		b   []byte
		tag uint64
	}
	inbox := make([]chan held, workers)
	for w := range inbox {
		inbox[w] = make(chan held, 16)
	}
	tagged := func(b []byte, tag uint64) bool {
		return binary.LittleEndian.Uint64(b) == tag && binary.LittleEndian.Uint64(b[len(b)-8:]) == tag
	}
	var allocs atomic.Uint64
	errs := make(chan error, workers)
	stopGCs := memtest.ForceGCs() // beside GOGC=1's
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []held
			free := func(h held) bool {
				if !tagged(h.b, h.tag) {
					errs <- fmt.Errorf("worker %d: chunk %p tagged %#x, not %#x: handed out twice", w, &h.b[0], binary.LittleEndian.Uint64(h.b), h.tag)
					return false
				}
				sh.DecRef(h.b)
				return true
			}
			for i := range rounds {
				n := 16 + (i*131+w*17)%4000
				tag := uint64(w)<<40 | uint64(i)
				b := sh.Alloc(n)
				allocs.Add(1)
				binary.LittleEndian.PutUint64(b, tag)
				binary.LittleEndian.PutUint64(b[n-8:], tag)
				h := held{b, tag}
				switch i % 5 {
				case 0: // to the next worker, which frees it
					select {
					case inbox[(w+1)%workers] <- h:
					default:
						mine = append(mine, h)
					}
				case 1: // a second holder on the next worker, then ours goes
					sh.AddRef(b)
					select {
					case inbox[(w+1)%workers] <- h:
					default:
						sh.DecRef(b)
					}
					mine = append(mine, h)
				default:
					mine = append(mine, h)
				}
				select {
				case got := <-inbox[w]:
					if !free(got) {
						return
					}
				default:
				}
				for len(mine) > 8 {
					if !free(mine[0]) {
						return
					}
					mine = mine[1:]
				}
			}
			for _, h := range mine {
				if !free(h) {
					return
				}
			}
		}()
	}
	wg.Wait()
	stopGCs()
	for w := range inbox { // what the workers sent last
		close(inbox[w])
		for h := range inbox[w] {
			if !tagged(h.b, h.tag) {
				t.Fatalf("chunk %p tagged %#x, not %#x: handed out twice", &h.b[0], binary.LittleEndian.Uint64(h.b), h.tag)
			}
			sh.DecRef(h.b)
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	idle, live, carved, err := sh.Account()
	if err != nil {
		t.Fatal(err)
	}
	if live != 0 || idle+live != carved {
		t.Fatalf("%d chunks idle and %d live of the %d carved for the idle sets", idle, live, carved)
	}
	sh.FlushQuarantine()
	if s := sharedStats(sh); s.LiveObjects != 0 || s.Allocs != allocs.Load() || s.Frees != s.Allocs || s.InUseBytes != 0 {
		t.Fatalf("after every DecRef, %d Allocs: %v", allocs.Load(), &s)
	}
}

// A DecRef of a chunk that the idle set holds again panics at the call, is
// counted, and leaves the chunk idle once: the next Allocs hand it out once.
func TestShared_DecRefOfAnIdleChunkPanics(t *testing.T) {
	sh := mustShared(t, 64, 4096, slab.WithShards(1))
	b := sh.Alloc(100)
	if !sh.DecRef(b) {
		t.Fatal("DecRef of the only reference")
	}
	wantMisuse(t, "memkit/slab: DecRef of a free chunk", "DecRef", checked.DoubleFree, func() { sh.DecRef(b) })
	x, y := sh.Alloc(100), sh.Alloc(100)
	if &x[0] == &y[0] {
		t.Fatal("one chunk handed out twice after a DecRef too many")
	}
	if s := sharedStats(sh); s.BadFrees != 1 || s.LiveObjects != 2 {
		t.Fatalf("stats %v; want 1 bad free, 2 live", &s)
	}
	sh.DecRef(x)
	sh.DecRef(y)
}

// ReadStats's Allocs and Frees, counted per chunk by the idle sets, agree
// with a model of the calls once the goroutines pause, and are never more
// than the model's while they run.
func TestShared_StatsAgainstAModel(t *testing.T) {
	sh := mustShared(t, 64, 4096)
	var allocs, frees uint64
	var held [][]byte
	stop := make(chan struct{})
	done := statsWatcher(sh.ReadStats, stop)
	for i := range 20000 {
		held = append(held, sh.Alloc(64<<(i%4)))
		allocs++
		if len(held) > 40 || i%3 == 0 {
			k := (i * 7) % len(held)
			sh.DecRef(held[k])
			frees++
			held = append(held[:k], held[k+1:]...)
		}
		if i%1000 == 0 {
			if s := sharedStats(sh); s.Allocs > allocs || s.Frees > frees {
				t.Fatalf("after %d Allocs and %d DecRefs: %v", allocs, frees, &s)
			}
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := sharedStats(sh); s.Allocs != allocs || s.Frees != frees || s.LiveObjects != uint64(len(held)) {
		t.Fatalf("model: %d Allocs, %d DecRefs, %d live; stats %v", allocs, frees, len(held), &s)
	}
	for _, b := range held {
		sh.DecRef(b)
	}
}

// The chunks a Shared's idle sets hold go back to their slabs after GCs,
// by the sweep the GCs run, and the slabs go back to malloc's owner.
func TestShared_IdleChunksGoBackAfterGCs(t *testing.T) {
	sh := mustShared(t, 64, 4096, slab.WithIdleSlabs(0))
	var bufs [][]byte
	for range 64 {
		bufs = append(bufs, sh.Alloc(512))
	}
	for _, b := range bufs {
		sh.DecRef(b)
	}
	sh.FlushQuarantine()
	if checked.Enabled {
		if s := sharedStats(sh); s.ReservedBytes != 0 {
			t.Fatalf("checked build, no idle sets: %v", &s)
		}
		return
	}
	if race.Enabled {
		t.Skip("under the race detector a Shared's idle sets keep their chunks")
	}
	if s := sharedStats(sh); s.ReservedBytes == 0 || s.LiveObjects != 0 {
		t.Fatalf("right after the DecRefs: %v; want the slabs held, nothing live", &s)
	}
	gcs := 0
	for ; gcs < 100 && sharedStats(sh).ReservedBytes != 0; gcs++ {
		runtime.GC()
		runtime.Gosched() // let the cleanup goroutine run
	}
	if s := sharedStats(sh); s.ReservedBytes != 0 || s.Releases != s.Grows {
		t.Fatalf("after %d GCs: %v", gcs, &s)
	}
	t.Logf("the slabs went back after %d GCs", gcs)
}

// AddRefN adds n references in one call: the chunk survives n DecRefs
// beside its owner's, on many goroutines at once, and the last frees it.
func TestShared_AddRefNFanOut(t *testing.T) {
	sh := mustShared(t, 64, 64<<10)
	const subscribers, frames = 50, 200
	var wg sync.WaitGroup
	lasts := make(chan bool, (subscribers+1)*frames)
	for f := range frames {
		b := sh.Alloc(1000)
		b[0] = byte(f)
		sh.AddRefN(b, subscribers)
		for range subscribers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if b[0] != byte(f) {
					t.Errorf("frame %d reads %d: freed under a subscriber", f, b[0])
				}
				lasts <- sh.DecRef(b)
			}()
		}
		if sh.DecRef(b) { // the publisher's: a subscriber's is the last, or this one
			lasts <- true
		}
	}
	wg.Wait()
	close(lasts)
	freed := 0
	for last := range lasts {
		if last {
			freed++
		}
	}
	if freed != frames {
		t.Fatalf("%d DecRefs reported the last reference; want one per frame, %d", freed, frames)
	}
	sh.FlushQuarantine()
	if s := sharedStats(sh); s.LiveObjects != 0 || s.Frees != frames || s.BadFrees != 0 {
		t.Fatalf("after every DecRef: %v", &s)
	}
}

// AddRefN refuses what AddRef refuses, and a count past the limit, and
// changes nothing then.
func TestShared_AddRefNRefuses(t *testing.T) {
	sh := mustShared(t, 64, 4096)
	b := sh.Alloc(100)
	memtest.CheckPanic(t, "memkit/slab: AddRefN count -1 must be at least 1", func() { sh.AddRefN(b, -1) })
	memtest.CheckPanic(t, "memkit/slab: reference count overflow", func() { sh.AddRefN(b, math.MaxInt32) })
	memtest.CheckPanic(t, "memkit/slab: buffer not allocated by this arena", func() { sh.AddRefN(make([]byte, 8), 2) })
	sh.AddRefN(b, 2)
	for k := range 3 { // AddRefN(2) of a chunk with one reference: the third DecRef is the last
		if last := sh.DecRef(b); last != (k == 2) {
			t.Fatalf("DecRef %d of 3 reported last %v", k+1, last)
		}
	}
	a := mustArena(t, 64, 4096, 2)
	c := a.Alloc(100)
	a.AddRefN(c, 3)
	for range 3 {
		if a.DecRef(c) {
			t.Fatal("an Arena's chunk freed before its AddRefN's references were dropped")
		}
	}
	if !a.DecRef(c) {
		t.Fatal("the Arena's last DecRef")
	}
}

// A second holder's AddRef and DecRef, and AddRefN, do not allocate.
func TestShared_RefsDoNotAllocate(t *testing.T) {
	skipIfChecked(t, "it records every allocation")
	sh := mustShared(t, 64, 1<<20)
	keep := sh.Alloc(512)
	for name, f := range map[string]func(){
		"AddRef+DecRef":         func() { sh.AddRef(keep); sh.DecRef(keep) },
		"AddRefN+DecRefs":       func() { sh.AddRefN(keep, 3); sh.DecRef(keep); sh.DecRef(keep); sh.DecRef(keep) },
		"Alloc+AddRef+DecRef*2": func() { b := sh.Alloc(100); sh.AddRef(b); sh.DecRef(b); sh.DecRef(b) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v allocs; want 0", name, n)
		}
	}
	sh.DecRef(keep)
}

// The table a Shared finds a buffer's slab in agrees with a search of the
// slabs, for slabs of sizes that are powers of two or not, packed side by
// side or scattered, and addresses inside, between and around them.
func TestShared_SlabTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{4096, 5000, 1 << 20, 3 << 19} {
		for round := range 50 {
			var bases []uintptr
			p := uintptr(uint64(1)<<32 + uint64(rng.IntN(1<<20))) // above 4 GiB on 64-bit; compiles on 32-bit
			for range 1 + rng.IntN(40) {
				if round%2 == 0 {
					p += uintptr(rng.IntN(3 * size)) // a gap, or none
				}
				bases = append(bases, p)
				p += uintptr(size)
			}
			var addrs []uintptr
			for range 500 {
				b := bases[rng.IntN(len(bases))]
				addrs = append(addrs, b+uintptr(rng.IntN(3*size))-uintptr(size))
			}
			addrs = append(addrs, 0, bases[0]-1, p)
			got := slab.SlabTableFinds(bases, size, addrs)
			for i, a := range addrs {
				want := -1
				for k, b := range bases {
					if a-b < uintptr(size) {
						want = k
					}
				}
				if got[i] != want {
					t.Fatalf("size %d: address %#x found in slab %d; want %d (bases %#x)", size, a, got[i], want, bases)
				}
			}
			// The lock-free paths' lookup finds a slab only in its open
			// span: all of it, the part its chunks cover, or none once
			// chained.
			spans := make([]uintptr, len(bases))
			for k := range spans {
				spans[k] = []uintptr{uintptr(size), uintptr(size - size%24), 0}[rng.IntN(3)]
			}
			got = slab.SlabTableOpens(bases, size, spans, addrs)
			for i, a := range addrs {
				want := -1
				for k, b := range bases {
					if a-b < spans[k] {
						want = k
					}
				}
				if got[i] != want {
					t.Fatalf("size %d: address %#x found open in slab %d; want %d (bases %#x, spans %d)", size, a, got[i], want, bases, spans)
				}
			}
		}
	}
}

// A chunk's index is its offset over the chunk size, computed with a
// multiplication for every size, power of two or not, at and around every
// multiple of the size and at random offsets below the largest slab.
func TestSlab_ChunkIndexIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []uint32{8, 16, 24, 40, 48, 96, 100, 4096, 4097, 5000, 65535, 65536, 1 << 20, 3 << 19, 1<<30 - 8, 1 << 30}
	for range 200 {
		sizes = append(sizes, 8+uint32(rng.IntN(1<<30-8)))
	}
	for _, size := range sizes {
		check := func(off uint32) {
			if got, want := slab.ChunkIndex(size, off), off/size; got != want {
				t.Fatalf("size %d, offset %d: index %d; want %d", size, off, got, want)
			}
		}
		for k := uint64(0); k*uint64(size) <= slab.MaxSlabSize && k < 1<<12; k++ {
			m := uint32(k * uint64(size))
			check(m)
			check(m + 1)
			check(m + size - 1)
			if m > 0 {
				check(m - 1)
			}
		}
		for range 1000 {
			check(uint32(rng.IntN(slab.MaxSlabSize)))
		}
	}
}

// The first lookup of AddRef and DecRef divides by the chunk size with a
// 64-bit multiply and a shift by 32: where a slab's hit span is not 0,
// that quotient is exact at and around every chunk's bounds and at random
// offsets below the span; the span is the slab's chunks' bytes for sizes
// that are powers of two and for the small slabs of every size.
func TestSlab_HitChunkIndexIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sizes := []uint32{1, 8, 24, 40, 100, 4095, 4096, 4097, 5000, 65535, 1 << 20, 3 << 19, 1<<30 - 8, 1 << 30}
	for range 200 {
		sizes = append(sizes, 1+uint32(rng.IntN(1<<20)))
	}
	inexact := 0
	for _, size := range sizes {
		for _, slabSize := range []uint64{64 << 10, 1 << 20, 16 << 20, slab.MaxSlabSize} {
			c := uint32(slabSize / uint64(size))
			if c == 0 {
				continue
			}
			span, _ := slab.HitChunkIndex(c, size, 0)
			exact := size&(size-1) == 0 || slabSize <= 64<<10
			if span == 0 {
				if exact {
					t.Fatalf("size %d, %d chunks: hit span 0", size, c)
				}
				inexact++
				continue
			}
			if span != uintptr(c)*uintptr(size) {
				t.Fatalf("size %d, %d chunks: hit span %d; want %d", size, c, span, uintptr(c)*uintptr(size))
			}
			check := func(off uintptr) {
				if _, got := slab.HitChunkIndex(c, size, off); got != off/uintptr(size) {
					t.Fatalf("size %d, %d chunks, offset %d: index %d; want %d", size, c, off, got, off/uintptr(size))
				}
			}
			for _, k := range []uint32{0, 1, 2, c / 2, c - 2, c - 1} {
				if k >= c {
					continue
				}
				m := uintptr(k) * uintptr(size)
				check(m)
				check(m + uintptr(size) - 1)
			}
			for range 100 {
				check(uintptr(rng.Uint64N(uint64(span))))
			}
		}
	}
	if inexact == 0 {
		t.Fatal("no size had an inexact multiply: the test no longer covers hit span 0")
	}
}

// A slab whose chunks the first lookup's multiply cannot divide exactly
// (hit span 0: 4 MiB of 1136-byte chunks) is served by the second lookup:
// counts, the last reference, and the misuse of a freed chunk and of a
// buffer straddling two chunks, as on any other slab.
func TestShared_InexactHitSpan(t *testing.T) {
	const size = 1136
	sh, err := slab.NewShared(size, 4<<20, 2, nil, slab.WithShards(1))
	if err != nil {
		t.Fatal(err)
	}
	buf := sh.Alloc(size)
	if cap(buf) != size {
		t.Fatalf("cap %d; want %d", cap(buf), size)
	}
	if got := sh.HitSpanOf(buf); got != 0 && !checked.Enabled {
		t.Fatalf("hit span %d; want 0", got)
	}
	sh.AddRef(buf)
	sh.AddRefN(buf, 2)
	for k := range 3 {
		if sh.DecRef(buf) {
			t.Fatalf("DecRef %d freed the chunk", k)
		}
	}
	next := sh.Alloc(size)
	if !checked.Enabled {
		straddling := unsafe.Slice(&buf[size-8], 16) // the end of buf and the start of the next chunk
		memtest.CheckPanic(t, "memkit/slab: buffer not allocated by this arena", func() { sh.AddRef(straddling) })
	}
	if !sh.DecRef(buf) {
		t.Fatal("the last DecRef did not free the chunk")
	}
	wantMisuse(t, "memkit/slab: AddRef of a free chunk", "AddRef", checked.StaleHandle, func() { sh.AddRef(buf) })
	wantMisuse(t, "memkit/slab: DecRef of a free chunk", "DecRef", checked.DoubleFree, func() { sh.DecRef(buf) })
	sh.DecRef(next)
}

// Slabs that share the granules of the Shared's table (slabs of 64 KiB
// placed 32 KiB off the granules' bounds, so that each granule holds the
// end of one slab and the start of the next) are served the same whether
// the first entry tried names a buffer's slab or the lookup goes on to the
// other slab of the entry: counts, the last reference and the misuse of a
// freed chunk.
func TestShared_SlabsSharingAGranule(t *testing.T) {
	const slabSize, n = 64 << 10, 4096
	backing := make([]byte, 5*slabSize)
	off := slabSize/2 - int(uintptr(unsafe.Pointer(&backing[0]))%slabSize)
	if off < 0 {
		off += slabSize
	}
	next := off
	malloc := func(size int) []byte {
		if next+size > len(backing) {
			return nil
		}
		b := backing[next : next+size : next+size]
		next += size
		return b
	}
	sh, err := slab.NewShared(n, slabSize, 2, malloc, slab.WithShards(1))
	if err != nil {
		t.Fatal(err)
	}
	var bufs [][]byte
	for range 3 * slabSize / n {
		bufs = append(bufs, sh.Alloc(n))
	}
	if next-off != 3*slabSize {
		t.Fatalf("the arena took %d bytes of slabs; want 3 slabs of %d", next-off, slabSize)
	}
	for i, b := range bufs {
		b[0] = byte(i)
		sh.AddRef(b[1:10])
		sh.AddRefN(b, 2)
		for k := range 3 {
			if sh.DecRef(b[k:]) {
				t.Fatalf("buffer %d: DecRef %d freed it with references left", i, k)
			}
		}
		if !sh.Owns(b) || b[0] != byte(i) {
			t.Fatalf("buffer %d: not live after its DecRefs balanced its AddRefs", i)
		}
		if !sh.DecRef(b) {
			t.Fatalf("buffer %d: the last DecRef did not free it", i)
		}
		wantMisuse(t, "memkit/slab: DecRef of a free chunk", "DecRef", checked.DoubleFree, func() { sh.DecRef(b) })
		wantMisuse(t, "memkit/slab: AddRef of a free chunk", "AddRef", checked.StaleHandle, func() { sh.AddRef(b) })
	}
	st := sharedStats(sh)
	if st.LiveObjects != 0 || st.BadFrees != uint64(len(bufs)) {
		t.Fatalf("live %d, bad frees %d; want 0 and %d", st.LiveObjects, st.BadFrees, len(bufs))
	}
}

// A Loc's lookup under its shard's lock reads the chunk's count and
// generation while other goroutines change them without the lock: another
// holder's DecRef, and the free and reuse of the chunk a stale Loc named.
// Every result must be the one the model expects; run with -race, which
// reports a plain access beside those lock-free ones.
func TestShared_LocLookupBesideLockFreeFrees(t *testing.T) {
	const rounds = 2000
	sh := mustShared(t, 64, 4096, slab.WithShards(1))
	held := sh.Alloc(64)
	l := sh.BufToLoc(held)
	gone := sh.Alloc(64)
	stale := sh.BufToLoc(gone)
	sh.DecRef(gone)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { // another holder of held; and a goroutine reusing stale's chunk
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			sh.AddRef(held)
			if sh.DecRef(held) {
				done <- fmt.Errorf("DecRef of a second holder freed the chunk")
				return
			}
			sh.DecRef(sh.Alloc(64))
		}
	}()
	for range rounds {
		if got := sh.LocToBuf(l); unsafe.SliceData(got) != unsafe.SliceData(held) || len(got) != 64 {
			t.Fatalf("LocToBuf of a live Loc: %d bytes at %p; want the 64 at %p", len(got), got, held)
		}
		if got := panicValue(func() { sh.LocToBuf(stale) }); !panicIs(got, "memkit/slab: stale handle", checked.StaleHandle) {
			t.Fatalf("LocToBuf of a stale Loc: panic %q", got)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !sh.DecRef(held) {
		t.Fatal("the last DecRef did not free the chunk")
	}
}
