package slab_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/shard"
	"github.com/memkit/memkit/slab"
	"github.com/memkit/memkit/stats"
)

// Cross-library comparisons live in cmd/memkit (memkit bench); these compare
// the arena with the standard library and bytepool only.

var benchSizes = []int{64, 512, 4 << 10}

func sizeName(n int) string { return "size=" + stats.FormatBytes(uint64(n)) }

func BenchmarkArena_AllocDecRef(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			b.Run("impl=memkit", func(b *testing.B) {
				a := mustArena(b, 64, 1<<20, 2)
				b.ReportAllocs()
				for b.Loop() {
					buf := a.Alloc(n)
					buf[0] = 1
					a.DecRef(buf)
				}
			})
			b.Run("impl=syncpool", func(b *testing.B) { memtest.BenchSyncPool(b, n) })
			b.Run("impl=bytepool", func(b *testing.B) {
				p, err := bytepool.New()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					buf := p.Get(n)
					buf[0] = 1
					p.Put(buf)
				}
			})
		})
	}
}

// BenchmarkArena_Loc is the handle path: Alloc, BufToLoc, LocToBuf,
// LocDecRef.
func BenchmarkArena_Loc(b *testing.B) {
	a := mustArena(b, 64, 1<<20, 2)
	b.ReportAllocs()
	for b.Loop() {
		l := a.BufToLoc(a.Alloc(512))
		a.LocToBuf(l)[0] = 1
		a.LocDecRef(l)
	}
}

// BenchmarkArena_Scattered frees chunks of many slabs in another order than
// they were allocated, so the buffer lookup misses its one-slab cache.
func BenchmarkArena_Scattered(b *testing.B) {
	a := mustArena(b, 64, 64<<10, 2)
	const live = 4096
	bufs := make([][]byte, live)
	for i := range bufs {
		bufs[i] = a.Alloc(512 + 512*(i&3))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		j := int(uint32(i) * 2654435761 % live)
		n := len(bufs[j])
		a.DecRef(bufs[j])
		bufs[j] = a.Alloc(n)
		i++
	}
}

func BenchmarkView(b *testing.B) {
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		slab.View[record](buf).ID++
	}
}

func BenchmarkShared_AllocDecRef(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			b.Run("impl=memkit-shared", func(b *testing.B) { benchShared(b, n) })
			b.Run("impl=syncpool", func(b *testing.B) { memtest.BenchSyncPool(b, n) })
		})
	}
}

// BenchmarkShared_Floor takes a Shared's Alloc+DecRef apart, in one run:
// a sync.Pool Get+Put (the peer), the two uncontended lock and
// unlock pairs a Shared's Alloc and DecRef take (one on the calling
// goroutine's shard, one on the buffer's), the Arena's Alloc+DecRef alone,
// and both together, the floor of a design that locks a shard per call,
// beside the Shared itself.
func BenchmarkShared_Floor(b *testing.B) {
	const n = 64
	b.Run("impl=syncpool", func(b *testing.B) { memtest.BenchSyncPool(b, n) })
	var locks [2]shard.Lock
	var held int
	b.Run("impl=2-locks", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			locks[0].Lock()
			held++
			locks[0].Unlock()
			locks[1].Lock()
			held--
			locks[1].Unlock()
		}
	})
	a := mustArena(b, 64, 1<<20, 2)
	arena := func() {
		buf := a.Alloc(n)
		buf[0] = 1
		a.DecRef(buf)
	}
	b.Run("impl=arena", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			arena()
		}
	})
	b.Run("impl=2-locks+arena", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			locks[0].Lock()
			buf := a.Alloc(n)
			locks[0].Unlock()
			buf[0] = 1
			locks[1].Lock()
			a.DecRef(buf)
			locks[1].Unlock()
		}
	})
	b.Run("impl=memkit-shared", func(b *testing.B) { benchShared(b, n) })
}

// benchShared is Alloc, touch, DecRef of n bytes on a Shared, on one
// goroutine.
func benchShared(b *testing.B, n int) {
	sh, err := slab.NewShared(64, 1<<20, 2, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		buf := sh.Alloc(n)
		buf[0] = 1
		sh.DecRef(buf)
	}
}

func BenchmarkShared_AllocDecRefParallel(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			b.Run("impl=memkit-shared", func(b *testing.B) {
				sh, err := slab.NewShared(64, 1<<20, 2, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						buf := sh.Alloc(n)
						buf[0] = 1
						sh.DecRef(buf)
					}
				})
			})
			b.Run("impl=syncpool", func(b *testing.B) { memtest.BenchSyncPoolParallel(b, n) })
		})
	}
}

// BenchmarkShared_AddRefDecRef is a second holder's AddRef and DecRef of a
// live chunk, beside an atomic counter's Add and Add(-1).
func BenchmarkShared_AddRefDecRef(b *testing.B) {
	b.Run("impl=memkit-shared", func(b *testing.B) {
		sh, err := slab.NewShared(64, 1<<20, 2, nil)
		if err != nil {
			b.Fatal(err)
		}
		buf := sh.Alloc(4096)
		b.ReportAllocs()
		for b.Loop() {
			sh.AddRef(buf)
			sh.DecRef(buf)
		}
	})
	b.Run("impl=atomic", func(b *testing.B) {
		var refs atomic.Int32
		b.ReportAllocs()
		for b.Loop() {
			refs.Add(1)
			refs.Add(-1)
		}
	})
}

// BenchmarkShared_FanOut is one frame handed to 50 subscribers: an Alloc,
// AddRefN for the subscribers, their 50 DecRefs and the publisher's; beside
// a sync.Pool buffer with an atomic counter, the same steps.
func BenchmarkShared_FanOut(b *testing.B) {
	const subscribers, n = 50, 4096
	b.Run("impl=memkit-shared", func(b *testing.B) {
		sh, err := slab.NewShared(64, 1<<20, 2, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			frame := sh.Alloc(n)
			frame[0] = 1
			sh.AddRefN(frame, subscribers)
			for range subscribers {
				sh.DecRef(frame)
			}
			sh.DecRef(frame)
		}
	})
	b.Run("impl=syncpool-atomic", func(b *testing.B) {
		type frame struct {
			buf  []byte
			refs atomic.Int32
		}
		sp := sync.Pool{New: func() any { return &frame{buf: make([]byte, n)} }}
		b.ReportAllocs()
		for b.Loop() {
			f := sp.Get().(*frame)
			f.buf[0] = 1
			f.refs.Store(1 + subscribers)
			for range subscribers + 1 {
				if f.refs.Add(-1) == 0 {
					sp.Put(f)
				}
			}
		}
	})
}
