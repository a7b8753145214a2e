package memkit_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/buddy"
	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/kv"
	"github.com/memkit/memkit/offheap"
	"github.com/memkit/memkit/ringbuf"
	"github.com/memkit/memkit/slab"
	"github.com/memkit/memkit/stats"
)

// TestSoak runs every allocator for -soak under random operations from
// many goroutines:
//
//	go test -run TestSoak -soak 10m
//
// (the soak lives in this root package, so the command needs no ./...).
// Each worker keeps a model of the blocks it holds: a new block must not
// overlap one it holds, and every block is filled with a pattern that is
// verified when it is freed and, every 256 steps, for all the blocks the
// worker holds, so a block handed to two workers at once shows as bytes
// changed under one of them. At the end every block is freed, in-use bytes
// must be back to zero and reserved bytes within the allocator's bound, and
// RSS must have stayed flat over the second half of the run.
func TestSoak(t *testing.T) {
	const workers = 8
	for _, a := range soakAllocators() {
		t.Run(a.name, func(t *testing.T) {
			if *memtest.SoakFlag <= 0 {
				t.Skip("soak test: run with -soak 10m")
			}
			get, put, src, bound := a.make(t)
			models := make([]*memtest.Model, workers)
			for i := range models {
				models[i] = memtest.NewModel(i + 1)
			}
			steps := make([]int, workers)
			memtest.Soak(t, workers, func(w int, rng *rand.Rand) error {
				m := models[w]
				steps[w]++
				if len(m.Live) < 64 && (len(m.Live) == 0 || rng.IntN(2) == 0) {
					// Log-uniform sizes from 1 byte to maxSize.
					n := 1 + rng.IntN(a.maxSize>>rng.IntN(bitLen(a.maxSize)))
					b := get(n)
					if len(b) != n {
						return fmt.Errorf("%s: asked for %d bytes, got %d", a.name, n, len(b))
					}
					if _, err := m.Add(b); err != nil {
						return err
					}
				} else {
					b, err := m.Remove(rng.IntN(len(m.Live)))
					if err != nil {
						return err
					}
					put(b)
				}
				if steps[w]%256 == 0 {
					return m.VerifyAll()
				}
				return nil
			})
			for _, m := range models {
				for len(m.Live) > 0 {
					b, err := m.Remove(len(m.Live) - 1)
					if err != nil {
						t.Fatal(err)
					}
					put(b)
				}
			}
			var s memkit.Stats
			src.ReadStats(&s)
			if s.InUseBytes != 0 || s.LiveObjects != 0 {
				t.Errorf("after every block was freed: %d bytes in use, %d live\n%v", s.InUseBytes, s.LiveObjects, &s)
			}
			if bound > 0 && s.ReservedBytes > bound {
				t.Errorf("reserved %s, over the bound of %s", stats.FormatBytes(s.ReservedBytes), stats.FormatBytes(bound))
			}
			t.Logf("%s: allocs %d, reserved %s at the end", a.name, s.Allocs, stats.FormatBytes(s.ReservedBytes))
		})
	}
	t.Run("arena", soakArena)
	t.Run("ringbuf", soakRing)
	t.Run("kv", soakKV)
}

func bitLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

// soakAllocator is a []byte allocator under soak: make returns its
// get and put, its stats, and the bound its reserved bytes must stay in
// (0: none checked).
type soakAllocator struct {
	name    string
	maxSize int
	make    func(t *testing.T) (get func(int) []byte, put func([]byte), src memkit.StatsSource, bound uint64)
}

func soakAllocators() []soakAllocator {
	return []soakAllocator{
		{"bytepool", 64 << 10, func(t *testing.T) (func(int) []byte, func([]byte), memkit.StatsSource, uint64) {
			p, err := bytepool.New(bytepool.WithMaxSize(64 << 10))
			must(t, err)
			// Elastic: what a worker holds, plus what shards and depots keep
			// idle, which decay bounds; 8 workers × 64 blocks × 64 KiB is
			// 32 MiB in flight at most.
			return p.Get, p.Put, p, 256 << 20
		}},
		{"bytepool-bounded", 64 << 10, func(t *testing.T) (func(int) []byte, func([]byte), memkit.StatsSource, uint64) {
			p, err := bytepool.New(bytepool.WithMaxSize(64<<10), bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(16<<20))
			must(t, err)
			return p.Get, p.Put, p, 0 // heap fallbacks past the budget are counted, not bounded
		}},
		{"slab", 16 << 10, func(t *testing.T) (func(int) []byte, func([]byte), memkit.StatsSource, uint64) {
			sh, err := slab.NewShared(64, 1<<20, 2, nil)
			must(t, err)
			return sh.Alloc, func(b []byte) {
				if !sh.DecRef(b) {
					panic("slab: DecRef of the only reference did not free")
				}
			}, sh, 0
		}},
		{"extent", 64 << 10, func(t *testing.T) (func(int) []byte, func([]byte), memkit.StatsSource, uint64) {
			s, err := extent.NewShared()
			must(t, err)
			// Free in two parts half the time: partial free under load.
			var mu sync.Mutex
			n := 0
			return s.Malloc, func(b []byte) {
				mu.Lock()
				n++
				split := n%2 == 0 && len(b) > 1
				mu.Unlock()
				if split {
					s.Free(b[:len(b)/2])
					s.Free(b[len(b)/2:])
					return
				}
				s.Free(b)
			}, s, 0
		}},
		{"buddy", 64 << 10, func(t *testing.T) (func(int) []byte, func([]byte), memkit.StatsSource, uint64) {
			const region = 64 << 20 // 8 workers × 64 blocks × 128 KiB at most, doubled
			a, err := buddy.New(region, 64)
			must(t, err)
			l := &lockedBuddy{a: a}
			return l.alloc, l.free, l, region
		}},
		{"buffer", 64 << 10, func(t *testing.T) (func(int) []byte, func([]byte), memkit.StatsSource, uint64) {
			p, err := buffer.NewPool()
			must(t, err)
			get, put := bufferGetPut(p.Get, func(b *buffer.Buffer) { b.Free() })
			return get, put, p, 0
		}},
		{"fixedpool", 8 << 10, func(t *testing.T) (func(int) []byte, func([]byte), memkit.StatsSource, uint64) {
			p, err := buffer.NewFixedPool(256, 8<<10)
			must(t, err)
			// Misses (more checked out than the pool holds) are fresh buffers
			// the pool does not keep: reserved stays at count × size.
			get, put := bufferGetPut(p.Checkout, func(b *buffer.Buffer) {
				if err := b.Close(); err != nil {
					panic(err)
				}
			})
			return get, put, p, 256 * 8 << 10
		}},
		{"offheap", 64 << 10, func(t *testing.T) (func(int) []byte, func([]byte), memkit.StatsSource, uint64) {
			return func(n int) []byte {
					b, err := offheap.Alloc(n)
					if err != nil {
						panic(err)
					}
					return b
				}, func(b []byte) {
					if err := offheap.Free(b); err != nil {
						panic(err)
					}
				}, offheapStats{}, 0
		}},
	}
}

// bufferGetPut adapts a Buffer pool to get and put of []byte: get writes n
// bytes into a buffer and returns its Bytes, put finds the buffer again.
func bufferGetPut(get func() *buffer.Buffer, free func(*buffer.Buffer)) (func(int) []byte, func([]byte)) {
	var mu sync.Mutex
	out := make(map[*byte]*buffer.Buffer)
	zero := make([]byte, 64<<10)
	return func(n int) []byte {
			b := get()
			b.Write(zero[:n])
			p := b.Bytes()
			mu.Lock()
			out[&p[0]] = b
			mu.Unlock()
			return p
		}, func(p []byte) {
			mu.Lock()
			b := out[&p[0]]
			delete(out, &p[0])
			mu.Unlock()
			free(b)
		}
}

// lockedBuddy shares a buddy.Allocator, which is for one goroutine, behind
// a mutex.
type lockedBuddy struct {
	mu sync.Mutex
	a  *buddy.Allocator
}

func (l *lockedBuddy) alloc(n int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, err := l.a.Alloc(n)
	if err != nil {
		panic(err)
	}
	return b
}

func (l *lockedBuddy) free(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.a.Free(b)
}

// ReadStats publishes the allocator's figures first: the lock makes this
// goroutine its user for the moment, so the soak's end-of-run check sees
// exact figures rather than ones up to 63 calls behind.
func (l *lockedBuddy) ReadStats(s *memkit.Stats) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.a.PublishStats()
	l.a.ReadStats(s)
}

type offheapStats struct{}

func (offheapStats) ReadStats(s *memkit.Stats) { offheap.ReadStats(s) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// soakArena has each worker take an arena from a Pool, fill it with
// objects holding pointers and with byte slices, verify them, and Put it
// back.
func soakArena(t *testing.T) {
	type node struct {
		left *node
		id   int
		name string
	}
	pool := arena.NewPool()
	memtest.Soak(t, 8, func(w int, rng *rand.Rand) error {
		a := pool.Get()
		defer pool.Put(a)
		n := 1 + rng.IntN(512)
		nodes := arena.MakeSlice[*node](a, 0, 4)
		var bufs [][]byte
		for i := range n {
			nd := arena.New[node](a)
			if nd.left != nil || nd.id != 0 || nd.name != "" {
				return errors.New("arena: New returned a non-zero object")
			}
			nd.id = i
			nd.name = arena.CloneString(a, "node")
			if i > 0 {
				nd.left = nodes[i-1]
			}
			nodes = arena.Append(a, nodes, nd)
			if i%16 == 0 {
				b := arena.MakeSlice[byte](a, 1+rng.IntN(4096), 4096)
				memtest.Fill(b, uint64(w)<<32|uint64(i))
				bufs = append(bufs, b)
			}
		}
		for i, nd := range nodes {
			if nd.id != i || nd.name != "node" || (i > 0 && nd.left != nodes[i-1]) {
				return fmt.Errorf("arena: node %d changed: %+v", i, *nd)
			}
		}
		for j, b := range bufs {
			if err := memtest.Verify(b, uint64(w)<<32|uint64(j*16)); err != nil {
				return err
			}
		}
		return nil
	})
	var s memkit.Stats
	pool.ReadStats(&s)
	t.Logf("arena pool: allocs %d, reserved %s at the end", s.Allocs, stats.FormatBytes(s.ReservedBytes))
}

// soakRing has half the workers write numbered, patterned records into a
// ring and half read them, checking each record is whole.
func soakRing(t *testing.T) {
	const slot = 256
	r, err := ringbuf.New(1024, slot)
	must(t, err)
	memtest.Soak(t, 8, func(w int, rng *rand.Rand) error {
		var rec [slot]byte
		if w%2 == 0 {
			n := 8 + rng.IntN(slot-8)
			seed := uint64(w)<<40 | rng.Uint64()>>24
			putSeed(rec[:8], seed)
			memtest.Fill(rec[8:n], seed)
			if err := r.Write(rec[:n]); err != nil && !errors.Is(err, ringbuf.ErrFull) {
				return err
			}
			return nil
		}
		n, ok := r.Read(rec[:])
		if !ok {
			return nil
		}
		if n < 8 {
			return fmt.Errorf("ringbuf: a %d-byte record", n)
		}
		return memtest.Verify(rec[8:n], getSeed(rec[:8]))
	})
	var rec [slot]byte
	for {
		if _, ok := r.Read(rec[:]); !ok {
			break
		}
	}
	var s memkit.Stats
	r.ReadStats(&s)
	if s.InUseBytes != 0 || r.Len() != 0 {
		t.Errorf("drained ring: %d bytes in use, %d records", s.InUseBytes, r.Len())
	}
}

// soakKV runs a kv.Map: each worker owns its keys (so it knows what each
// must hold) and sets values of random sizes, deletes, and reads back with
// Get and View; every 4096 steps it checks all its keys. At the end the
// Map is emptied, and its in-use bytes and entries must be zero.
func soakKV(t *testing.T) {
	if *memtest.SoakFlag <= 0 {
		t.Skip("soak test: run with -soak 10m")
	}
	const workers, keys = 8, 4096
	m, err := kv.New()
	must(t, err)
	defer m.Close()
	seeds := make([][]uint64, workers) // 0: absent
	steps := make([]int, workers)
	for w := range seeds {
		seeds[w] = make([]uint64, keys)
	}
	key := func(w, i int) []byte { return fmt.Appendf(nil, "w%d-k%d", w, i) }
	check := func(w, i int, got []byte, ok bool) error {
		want := seeds[w][i]
		switch {
		case ok != (want != 0):
			return fmt.Errorf("kv: %s present %v, want %v", key(w, i), ok, want != 0)
		case ok && (len(got) < 8 || getSeed(got) != want):
			return fmt.Errorf("kv: %s holds another value", key(w, i))
		case ok:
			return memtest.Verify(got[8:], want)
		}
		return nil
	}
	vs, dsts := make([][]byte, workers), make([][]byte, workers) // each worker's scratch
	memtest.Soak(t, workers, func(w int, rng *rand.Rand) error {
		v, dst := vs[w], dsts[w]
		defer func() { vs[w], dsts[w] = v, dst }()
		i := rng.IntN(keys)
		steps[w]++
		switch op := rng.IntN(10); {
		case op < 4:
			seed := uint64(w)<<56 | rng.Uint64()>>8 | 1
			v = append(v[:0], make([]byte, 8+rng.IntN(2000))...)
			putSeed(v, seed)
			memtest.Fill(v[8:], seed)
			if err := m.Set(key(w, i), v); err != nil {
				return err
			}
			seeds[w][i] = seed
		case op < 5:
			if m.Delete(key(w, i)) != (seeds[w][i] != 0) {
				return fmt.Errorf("kv: Delete of %s disagrees with the model", key(w, i))
			}
			seeds[w][i] = 0
		case op < 8:
			var ok bool
			dst, ok = m.Get(dst[:0], key(w, i))
			if err := check(w, i, dst, ok); err != nil {
				return err
			}
		default:
			var err error
			if !m.View(key(w, i), func(b []byte) { err = check(w, i, b, true) }) {
				err = check(w, i, nil, false)
			}
			if err != nil {
				return err
			}
		}
		if steps[w]%4096 == 0 {
			for i := range keys {
				var ok bool
				dst, ok = m.Get(dst[:0], key(w, i))
				if err := check(w, i, dst, ok); err != nil {
					return err
				}
			}
		}
		return nil
	})
	for w := range seeds {
		for i := range keys {
			m.Delete(key(w, i))
		}
	}
	var s memkit.Stats
	m.ReadStats(&s)
	if s.InUseBytes != 0 || s.LiveObjects != 0 || m.Len() != 0 {
		t.Errorf("emptied Map: %d bytes in use, %d entries\n%v", s.InUseBytes, s.LiveObjects, &s)
	}
	t.Logf("kv: sets %d, reserved %s at the end", s.Allocs, stats.FormatBytes(s.ReservedBytes))
}

func putSeed(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

func getSeed(b []byte) uint64 {
	var v uint64
	for i := range 8 {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}
