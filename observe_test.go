package memkit_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/buddy"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/kv"
	"github.com/memkit/memkit/slab"
)

// An allocator for one goroutine may be published and scraped from
// another while its owner works: ReadStats only reads. Each case runs an
// owner that allocates and frees under a model — every block's bytes must
// read back, no two live blocks may overlap — while a second goroutine
// scrapes the debug page and expvar and reads the stats directly. Run it
// under -race: a ReadStats that writes shows as a race, or as the owner's
// blocks handed out twice.
func TestObserve_ScrapingWhileTheOwnerWorks(t *testing.T) {
	const ops = 20000
	for _, c := range []struct {
		name  string
		setup func(t *testing.T) (src memkit.StatsSource, get func(int) []byte, put func([]byte))
	}{
		{"extent", func(t *testing.T) (memkit.StatsSource, func(int) []byte, func([]byte)) {
			a, err := extent.New()
			must(t, err)
			return a, a.Malloc, a.Free
		}},
		{"buddy", func(t *testing.T) (memkit.StatsSource, func(int) []byte, func([]byte)) {
			a, err := buddy.New(16<<20, 64)
			must(t, err)
			return a, func(n int) []byte {
				b, err := a.Alloc(n)
				if err != nil {
					panic(err)
				}
				return b
			}, a.Free
		}},
		{"slab", func(t *testing.T) (memkit.StatsSource, func(int) []byte, func([]byte)) {
			a, err := slab.NewArena(64, 1<<20, 2, nil)
			must(t, err)
			return a, a.Alloc, func(b []byte) { a.DecRef(b) }
		}},
		{"arena.Typed", func(t *testing.T) (memkit.StatsSource, func(int) []byte, func([]byte)) {
			// Objects live until Reset: put is nil, and the loop resets the
			// arena and its model every 256 objects.
			a := arena.NewTyped[[64]byte]()
			return a, func(n int) []byte {
				if n == 0 {
					a.Reset()
					return nil
				}
				return a.New()[:]
			}, nil
		}},
		{"arena", func(t *testing.T) (memkit.StatsSource, func(int) []byte, func([]byte)) {
			a := arena.NewArena()
			return a, func(n int) []byte {
				if n == 0 {
					a.Reset()
					return nil
				}
				return arena.MakeSlice[byte](a, n, n)
			}, nil
		}},
		{"bytepool-bounded", func(t *testing.T) (memkit.StatsSource, func(int) []byte, func([]byte)) {
			p, err := bytepool.New(bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(8<<20))
			must(t, err)
			return p, p.Get, p.Put
		}},
		{"slab.Shared", func(t *testing.T) (memkit.StatsSource, func(int) []byte, func([]byte)) {
			a, err := slab.NewShared(64, 1<<20, 2, nil)
			must(t, err)
			return a, a.Alloc, func(b []byte) { a.DecRef(b) }
		}},
		{"extent.Shared", func(t *testing.T) (memkit.StatsSource, func(int) []byte, func([]byte)) {
			a, err := extent.NewShared()
			must(t, err)
			return a, a.Malloc, a.Free
		}},
		{"kv", func(t *testing.T) (memkit.StatsSource, func(int) []byte, func([]byte)) {
			// A block is an entry: stored when handed out and again with
			// the model's pattern when freed, read back, then deleted.
			m, err := kv.New(kv.WithShards(4))
			must(t, err)
			t.Cleanup(func() { m.Close() })
			key := func(b []byte) []byte { return fmt.Appendf(nil, "%p", unsafe.SliceData(b)) }
			return m, func(n int) []byte {
					b := make([]byte, n)
					must(t, m.Set(key(b), b))
					return b
				}, func(b []byte) {
					must(t, m.Set(key(b), b))
					if got, ok := m.Get(nil, key(b)); !ok || !bytes.Equal(got, b) {
						t.Fatalf("entry %s does not read back", key(b))
					}
					m.Delete(key(b))
				}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, get, put := c.setup(t)
			name := "memkit.test.observe." + c.name
			memkit.Publish(name, src)
			defer memkit.Unpublish(name)
			srv := httptest.NewServer(memkit.Handler())
			defer srv.Close()

			var done atomic.Bool
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // the scraper
				defer wg.Done()
				var s memkit.Stats
				for !done.Load() {
					src.ReadStats(&s)
					if s.LiveObjects > s.Allocs {
						t.Errorf("%d live objects but %d allocations", s.LiveObjects, s.Allocs)
						return
					}
					for _, path := range []string{"/", "/?format=json"} {
						resp, err := srv.Client().Get(srv.URL + path)
						if err != nil {
							t.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}
			}()
			m := memtest.NewModel(0)
			rng := rand.New(rand.NewPCG(1, 2))
			for range ops {
				if put == nil && len(m.Live) == 256 {
					if err := m.VerifyAll(); err != nil {
						t.Fatal(err)
					}
					get(0) // Reset
					m.Live = m.Live[:0]
				}
				if put == nil || len(m.Live) < 64 && rng.IntN(2) == 0 {
					b := get(1 + rng.IntN(2048))
					if _, err := m.Add(b); err != nil {
						t.Fatal(err)
					}
				} else if len(m.Live) > 0 {
					b, err := m.Remove(rng.IntN(len(m.Live)))
					if err != nil {
						t.Fatal(err)
					}
					put(b)
				}
			}
			done.Store(true)
			wg.Wait()
			if err := m.VerifyAll(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
