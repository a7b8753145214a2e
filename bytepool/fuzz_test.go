package bytepool_test

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/sysmem"
)

// expect is what a goroutine's model says the pool's counters must show.
type expect struct {
	allocs, frees, badFrees, failures uint64
}

// FuzzPool decodes the input into Get, TryGet, Put, Cache and bad-Put
// operations on one to three goroutines, each with its own model, and checks
// that no two live buffers overlap, that every byte written reads back until
// Put, and that the pool's stats agree with the models. The misuses it tries
// — a Put of foreign memory, of memory another memkit allocator owns, of a
// buffer whose start moved, a second Put — must be counted or refused
// (release build) or reported (checked build), a size the machine cannot
// serve must panic with bytepool's message (TryGet: false) in both, and every
// misuse must leave every live buffer intact.
func FuzzPool(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{1, 0, 200, 0, 0, 255, 255, 4, 0, 4, 1, 5, 9, 9, 6, 0, 8, 100, 0})
	f.Add([]byte{2, 3, 0, 0, 1, 1, 16, 0, 2, 0, 64, 4, 0, 3, 0, 2, 7, 8, 7, 1, 2})
	f.Add([]byte{5, 0, 255, 1, 0, 255, 1, 0, 255, 1, 3, 255, 1, 4, 0, 4, 0, 4, 0})
	f.Add([]byte{0, 0, 100, 0, 6, 6, 1, 0, 5, 6, 6, 255, 255, 38, 7})
	f.Add([]byte{0, 0, 100, 0, 6, 6, 0, 6, 6, 2, 6, 6, 4, 3, 0, 7})
	f.Fuzz(runFuzzBody)
}

func runFuzzBody(t *testing.T, data []byte) {
	{
		ops := memtest.NewOps(data)
		cfg := ops.Byte()
		const maxSize = 256 << 10 // classes past 64 KiB: a Bounded pool's runs span slabs
		opts := []bytepool.Option{bytepool.WithMaxSize(maxSize), bytepool.WithExactStats()}
		switch cfg % 3 {
		case 1:
			opts = append(opts, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(1<<20))
		case 2:
			opts = append(opts, bytepool.WithZeroing())
		}
		p, err := bytepool.New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		workers := 1 + int(cfg>>3)%3
		streams := ops.Split(workers, 16)
		models := make([]*memtest.Model, workers)
		expects := make([]expect, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			models[w] = memtest.NewModel(w)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[w] = runOps(p, streams[w], models[w], &expects[w], workers == 1)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := memtest.CheckDisjoint(models...); err != nil {
			t.Fatal(err)
		}
		var want expect
		var live, inUse uint64
		for w := range workers {
			want.allocs += expects[w].allocs
			want.frees += expects[w].frees
			want.badFrees += expects[w].badFrees
			want.failures += expects[w].failures
			for _, blk := range models[w].Live {
				live++
				inUse += uint64(cap(blk.Buf))
			}
		}
		var s memkit.Stats
		p.ReadStats(&s)
		if s.Allocs != want.allocs || s.Frees != want.frees || s.BadFrees != want.badFrees ||
			s.Failures != want.failures || s.LiveObjects != live || s.InUseBytes != inUse {
			t.Fatalf("stats %v\nmodel: %+v live %d in use %d", &s, want, live, inUse)
		}
		if s.ReservedBytes < s.InUseBytes {
			t.Fatalf("reserved %d < in use %d", s.ReservedBytes, s.InUseBytes)
		}
		for _, m := range models {
			for len(m.Live) > 0 {
				b, err := m.Remove(0)
				if err != nil {
					t.Fatal(err)
				}
				p.Put(b)
			}
		}
		p.ReadStats(&s)
		if s.LiveObjects != 0 || s.InUseBytes != 0 {
			t.Fatalf("after returning everything: %v", &s)
		}
	}
}

// maxLive bounds each goroutine's live buffers, so that one input's cost
// stays small and the fuzzer keeps its pace.
const maxLive = 48

// size decodes a request size: mostly small, sometimes up to a little above
// the largest class.
func size(ops *memtest.Ops) int {
	n := ops.Uint16()
	switch {
	case n&1 == 0:
		return n % 4100
	case n&3 == 3: // up to a little above the largest class
		return n % 66000 * 4
	}
	return n % 70000
}

// solo is true when runOps is the pool's only user, so that a buffer it
// puts stays idle until it gets one again.
func runOps(p *bytepool.Pool, ops *memtest.Ops, m *memtest.Model, e *expect, solo bool) error {
	c := p.NewCache()
	defer c.Release()
	for ops.More() {
		op := ops.Byte()
		if len(m.Live) >= maxLive && op%8 != 6 && op%8 != 7 {
			op = 3 // too many live: put one back instead
		}
		switch op % 8 {
		case 0, 1: // Get, sizes up to a little above the largest class
			n := size(ops)
			b := p.Get(n)
			if len(b) != n {
				return errorf("Get(%d) returned len %d", n, len(b))
			}
			if _, err := m.Add(b); err != nil {
				return err
			}
			e.allocs++
		case 2: // TryGet
			n := size(ops)
			b, ok := p.TryGet(n)
			if !ok {
				e.failures++
				continue
			}
			if _, err := m.Add(b); err != nil {
				return err
			}
			e.allocs++
		case 3, 4: // Put a live buffer, to the pool or the cache
			if len(m.Live) == 0 {
				continue
			}
			b, err := m.Remove(int(ops.Byte()) % len(m.Live))
			if err != nil {
				return err
			}
			if op&1 == 0 {
				c.Put(b)
			} else {
				p.Put(b)
			}
			e.frees++
		case 5: // Cache Get
			n := size(ops)
			if _, err := m.Add(c.Get(n)); err != nil {
				return err
			}
			e.allocs++
		case 6: // a misuse
			if err := misuseOp(p, ops, m, e, solo); err != nil {
				return err
			}
		case 7:
			if err := m.VerifyAll(); err != nil {
				return err
			}
		}
	}
	return m.VerifyAll()
}

// misuseOp makes one of the mistakes of the misuse table (misuse_test.go)
// between correct operations, and checks that it was counted (release
// build), reported (checked build) or, where the table says neither, that
// it left every live buffer intact (the caller verifies the model).
func misuseOp(p *bytepool.Pool, ops *memtest.Ops, m *memtest.Model, e *expect, solo bool) error {
	switch k := ops.Byte(); k % 8 {
	case 7: // a hostile length: a size the machine cannot serve, as a peer's length field may ask
		n, ok := hostileSize(ops)
		if !ok {
			return nil
		}
		want := panicTooLarge(n)
		if msg := memtest.PanicOf(func() { p.Get(n) }); msg != want {
			return errorf("Get(%d): panic %q; want %q", n, msg, want)
		}
		if msg := memtest.PanicOf(func() { p.NewCache().Get(n) }); msg != want {
			return errorf("Cache.Get(%d): panic %q; want %q", n, msg, want)
		}
		if b, ok := p.TryGet(n); ok || b != nil {
			return errorf("TryGet(%d) = %d bytes, %v", n, len(b), ok)
		}
		e.failures++
	case 3: // a write after Put, before anyone can get the buffer again
		if len(m.Live) == 0 || !solo {
			// Another goroutine could get the buffer first: the write
			// would then land in its live buffer, as the docs say.
			return nil
		}
		b, err := m.Remove(int(ops.Byte()) % len(m.Live))
		if err != nil || cap(b) == 0 {
			return err
		}
		p.Put(b)
		e.frees++
		i := int(ops.Byte()) % cap(b)
		full := b[:cap(b)]
		old := full[i]
		full[i] ^= 0x5a
		if !checked.Enabled {
			return nil
		}
		mu := misuseOf(func() { memtest.PanicWithLeaksError(p) })
		full[i] = old // let the quarantine release it
		if cap(b) > 64<<10 || p.HeapFallback(b) {
			return nil // an oversize or fallback buffer goes back to the GC, unchecked
		}
		if mu == nil || mu.Kind != checked.UseAfterFree {
			return errorf("write after Put: misuse %v; want a use after free", mu)
		}
	case 4: // a write into the slack past the length, then Put
		if len(m.Live) == 0 {
			return nil
		}
		j := int(ops.Byte()) % len(m.Live)
		b := m.Live[j].Buf
		if len(b) == cap(b) || cap(b) > 64<<10 {
			return nil
		}
		full := b[:cap(b)]
		old := full[len(b)]
		full[len(b)] ^= 0x5a
		if !checked.Enabled {
			if _, err := m.Remove(j); err != nil {
				return err
			}
			p.Put(b) // not caught: the cap lock keeps the write in the buffer
			e.frees++
			return nil
		}
		mu := misuseOf(func() { p.Put(b) })
		full[len(b)] = old // the buffer is still live
		if mu == nil || mu.Kind != checked.Overflow {
			return errorf("write into the slack: misuse %v; want an overflow", mu)
		}
	case 5: // a second Put after the buffer went to a new owner
		if len(m.Live) == 0 || !checked.Enabled {
			return nil // the release build cannot see it (see TestMistakes)
		}
		b, err := m.Remove(int(ops.Byte()) % len(m.Live))
		if err != nil {
			return err
		}
		p.Put(b)
		e.frees++
		c := p.Get(len(b))
		if _, err := m.Add(c); err != nil {
			return err
		}
		e.allocs++
		if unsafe.SliceData(c[:cap(c)]) == unsafe.SliceData(b[:cap(b)]) {
			// A Bounded pool whose region ran out emptied its quarantine to
			// serve the Get: the second Put is now the new owner's.
			return nil
		}
		if !solo && p.Policy() == bytepool.Bounded {
			// Another goroutine's Get may have emptied the quarantine the
			// same way and taken b: the second Put could be its owner's.
			return nil
		}
		if mu := misuseOf(func() { p.Put(b) }); mu == nil || mu.Kind != checked.DoubleFree {
			return errorf("second Put after reuse: misuse %v; want a double free", mu)
		}
	case 6: // Put of memory another memkit allocator owns, into an Elastic pool
		if p.Policy() != bytepool.Elastic {
			return nil // a Bounded pool drops it as a fallback
		}
		fs, err := foreigners()
		if err != nil {
			return err
		}
		return putForeign(p, fs[int(ops.Byte())%len(fs)])
	case 0: // Put of memory the pool never handed out, with a capacity that is no class
		n := 1 + int(ops.Byte())*97
		if n == 64 || p.ClassSize(n) == n {
			return nil
		}
		if !checked.Enabled {
			p.Put(make([]byte, n))
			e.badFrees++
			return nil
		}
		if mu := misuseOf(func() { p.Put(make([]byte, n)) }); mu == nil || mu.Kind != checked.ForeignFree {
			return errorf("foreign Put(cap %d): misuse %v; want a foreign free", n, mu)
		}
	case 1: // Put of a live buffer resliced past its first byte
		if len(m.Live) == 0 {
			return nil
		}
		b := m.Live[int(ops.Byte())%len(m.Live)].Buf
		if cap(b) < 2 {
			return nil
		}
		b = b[:cap(b)] // its length may be 0
		if !checked.Enabled {
			if cap(b) > 64<<10 { // oversize: the release build cannot tell
				return nil
			}
			p.Put(b[1:]) // the capacity is no class
			e.badFrees++
			return nil
		}
		if mu := misuseOf(func() { p.Put(b[1:]) }); mu == nil || mu.Kind != checked.MovedFree {
			return errorf("moved Put: misuse %v; want a moved free", mu)
		}
	case 2: // a second Put straight after the first
		if len(m.Live) == 0 || !checked.Enabled && (!solo || p.Policy() != bytepool.Elastic || cap(m.Live[0].Buf) > 64<<10) {
			// The release build of an Elastic pool catches it while the
			// buffer is idle, which another goroutine's Get could end; an
			// oversize buffer it drops and cannot tell. (A Bounded pool's
			// heap fallbacks, which it drops, cannot be told either.)
			return nil
		}
		i := 0
		if checked.Enabled {
			i = int(ops.Byte()) % len(m.Live)
		}
		b, err := m.Remove(i)
		if err != nil {
			return err
		}
		p.Put(b)
		e.frees++
		if !checked.Enabled {
			if msg := memtest.PanicOf(func() { p.Put(b) }); msg != "memkit/bytepool: double free" {
				return errorf("second Put: panic %q; want a double free", msg)
			}
			return nil
		}
		if mu := misuseOf(func() { p.Put(b) }); mu == nil || mu.Kind != checked.DoubleFree {
			return errorf("second Put: misuse %v; want a double free", mu)
		}
	}
	return nil
}

// hostileSize decodes a size above every class that the machine refuses
// now (sysmem.Available): from 1 TiB to the largest int. ok is false where
// an int cannot hold one or the machine would serve it.
func hostileSize(ops *memtest.Ops) (n int, ok bool) {
	if math.MaxInt < 1<<40 {
		return 0, false
	}
	u := uint64(1)<<40 | uint64(ops.Uint16())<<(24+ops.Byte()%39)
	n = int(u & math.MaxInt)
	return n, !sysmem.Available(uint64(n))
}

// misuseOf runs f and returns the *checked.Misuse it panicked with, or nil
// if it returned; any other panic goes on.
func misuseOf(f func()) (m *checked.Misuse) {
	defer func() {
		if r := recover(); r != nil {
			var ok bool
			if m, ok = r.(*checked.Misuse); !ok {
				panic(r)
			}
		}
	}()
	f()
	return nil
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
