package main

import (
	"testing"

	"github.com/bytedance/gopkg/lang/mcache"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/memtest"
)

// BenchmarkDirect measures Get+Put with every call made directly on the
// concrete type, without memkit bench's interface dispatch (about 3-4 ns per
// Get+Put, the same for every impl). It is the check on the targets
// against mcache, the fastest peer: run it with
//
//	go -C cmd/memkit test -run '^$' -bench Direct -count 6 | benchstat -col /impl -
func BenchmarkDirect(b *testing.B) {
	for _, n := range sizes {
		b.Run("GetPut/size="+sizeName(n), func(b *testing.B) {
			b.Run("impl=memkit", func(b *testing.B) { benchPool(b, n) })
			b.Run("impl=memkit-cache", func(b *testing.B) { benchCache(b, n) })
			b.Run("impl=memkit-bounded", func(b *testing.B) { benchPoolOf(b, n, newBounded()) })
			b.Run("impl=mcache", func(b *testing.B) { benchMcache(b, n) })
			b.Run("impl=syncpool", func(b *testing.B) { memtest.BenchSyncPool(b, n) })
		})
		b.Run("GetPutParallel/size="+sizeName(n), func(b *testing.B) {
			b.Run("impl=memkit", func(b *testing.B) {
				p := must(bytepool.New())
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						buf := p.Get(n)
						buf[0] = 1
						p.Put(buf)
					}
				})
			})
			b.Run("impl=memkit-bounded", func(b *testing.B) {
				p := newBounded()
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						buf := p.Get(n)
						buf[0] = 1
						p.Put(buf)
					}
				})
			})
			b.Run("impl=mcache", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						buf := mcache.Malloc(n)
						buf[0] = 1
						mcache.Free(buf)
					}
				})
			})
		})
	}
}

var _ = bytepool.Get

// benchPool, benchCache and benchMcache are Get+Put of n bytes, with a
// write, called directly on the shared pool, a Cache and mcache.
func benchPool(b *testing.B, n int) { benchPoolOf(b, n, must(bytepool.New())) }

// newBounded is memkit-bounded's pool.
func newBounded() *bytepool.Pool {
	return must(bytepool.New(bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(boundedBudget)))
}

// benchPoolOf is benchPool on p.
func benchPoolOf(b *testing.B, n int, p *bytepool.Pool) {
	b.ReportAllocs()
	for b.Loop() {
		buf := p.Get(n)
		buf[0] = 1
		p.Put(buf)
	}
}

func benchCache(b *testing.B, n int) {
	c := must(bytepool.New()).NewCache()
	b.ReportAllocs()
	for b.Loop() {
		buf := c.Get(n)
		buf[0] = 1
		c.Put(buf)
	}
}

func benchMcache(b *testing.B, n int) {
	b.ReportAllocs()
	for b.Loop() {
		buf := mcache.Malloc(n)
		buf[0] = 1
		mcache.Free(buf)
	}
}
