package bytepool_test

import (
	"runtime"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/stats"
)

// Cross-library comparisons live in cmd/memkit (memkit bench); these compare
// the pool with the standard library only, so the core needs no other module.

var benchSizes = []int{64, 512, 4 << 10, 64 << 10, 1 << 20}

func sizeName(n int) string { return "size=" + stats.FormatBytes(uint64(n)) }

func BenchmarkPool_GetPut(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			b.Run("impl=memkit", func(b *testing.B) {
				p := mustNew(b)
				b.ReportAllocs()
				for b.Loop() {
					buf := p.Get(n)
					buf[0] = 1
					p.Put(buf)
				}
			})
			b.Run("impl=memkit-losing", func(b *testing.B) {
				p := losingPool(b, n)
				b.ReportAllocs()
				for b.Loop() {
					buf := p.Get(n)
					buf[0] = 1
					p.Put(buf)
				}
			})
			b.Run("impl=memkit-locked", func(b *testing.B) { // every class under the reserve's mutex (WithLockedFrom)
				p := mustNew(b, bytepool.WithLockedFrom(1))
				b.ReportAllocs()
				for b.Loop() {
					buf := p.Get(n)
					buf[0] = 1
					p.Put(buf)
				}
			})
			b.Run("impl=memkit-pkg", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					buf := bytepool.Get(n)
					buf[0] = 1
					bytepool.Put(buf)
				}
			})
			b.Run("impl=memkit-cache", func(b *testing.B) {
				c := mustNew(b).NewCache()
				b.ReportAllocs()
				for b.Loop() {
					buf := c.Get(n)
					buf[0] = 1
					c.Put(buf)
				}
			})
			b.Run("impl=memkit-bounded", func(b *testing.B) {
				p := mustNew(b, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(64<<20))
				b.ReportAllocs()
				for b.Loop() {
					buf := p.Get(n)
					buf[0] = 1
					p.Put(buf)
				}
			})
			b.Run("impl=syncpool", func(b *testing.B) { memtest.BenchSyncPool(b, n) })
		})
	}
}

func BenchmarkPool_GetPutParallel(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			b.Run("impl=memkit", func(b *testing.B) {
				p := mustNew(b)
				getPutParallel(b, p, n)
			})
			b.Run("impl=memkit-losing", func(b *testing.B) {
				p := losingPool(b, n)
				getPutParallel(b, p, n)
			})
			b.Run("impl=memkit-bounded", func(b *testing.B) {
				p := mustNew(b, bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(64<<20))
				getPutParallel(b, p, n)
			})
			b.Run("impl=memkit-cache", func(b *testing.B) {
				p := mustNew(b)
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					c := p.NewCache()
					defer c.Release()
					for pb.Next() {
						buf := c.Get(n)
						buf[0] = 1
						c.Put(buf)
					}
				})
			})
			b.Run("impl=syncpool", func(b *testing.B) { memtest.BenchSyncPoolParallel(b, n) })
		})
	}
}

// getPutParallel runs Get+Put pairs of n bytes from p on every P.
func getPutParallel(b *testing.B, p *bytepool.Pool, n int) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			buf := p.Get(n)
			buf[0] = 1
			p.Put(buf)
		}
	})
}

// losingPool returns an Elastic pool whose class of n bytes lost a buffer
// to the GC (one never put back, as the package-level pool sees from its
// users) and so stays in loss mode: its clock stands still, so that no
// period ends without a loss.
func losingPool(b *testing.B, n int) *bytepool.Pool {
	p := mustNew(b)
	p.SetClock(func() int64 { return 0 })
	_ = p.Get(n)
	for i := 0; readStats(p).Releases == 0; i++ {
		if i == 1000 {
			b.Fatal("the GC did not collect the buffer never put back")
		}
		runtime.GC()
		runtime.Gosched()
	}
	p.Tend()
	return p
}

// BenchmarkPool_CrossGoroutine gets on one goroutine and puts on another.
func BenchmarkPool_CrossGoroutine(b *testing.B) {
	p := mustNew(b)
	b.ReportAllocs()
	ch := make(chan []byte, 128)
	done := make(chan struct{})
	go func() {
		for buf := range ch {
			p.Put(buf)
		}
		close(done)
	}()
	for b.Loop() {
		ch <- p.Get(4096)
	}
	close(ch)
	<-done
}

func BenchmarkPool_ReadStats(b *testing.B) {
	p := mustNew(b)
	var s memkit.Stats
	b.ReportAllocs()
	for b.Loop() {
		p.ReadStats(&s)
	}
	b.ReportMetric(float64(len(s.Classes)), "classes")
}
