package extent_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/extent"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/stats"
)

var benchSizes = []int{64, 4 << 10, 64 << 10}

// BenchmarkAllocator_MallocFree is one Malloc and one Free per op:
//
//	go test -run '^$' -bench MallocFree -count 6 ./extent | benchstat -col /impl -
func BenchmarkAllocator_MallocFree(b *testing.B) {
	for _, n := range benchSizes {
		name := "size=" + stats.FormatBytes(uint64(n))
		b.Run(name+"/impl=memkit", func(b *testing.B) {
			a := mustNew(b)
			b.ReportAllocs()
			for b.Loop() {
				p := a.Malloc(n)
				p[0] = 1
				a.Free(p)
			}
		})
		b.Run(name+"/impl=syncpool", func(b *testing.B) { memtest.BenchSyncPool(b, n) })
	}
}

// BenchmarkShared_MallocFree is one Malloc and one Free per op on a Shared,
// serial and under RunParallel, against sync.Pool's Get+Put of a *[]byte in
// the same run:
//
//	go test -run '^$' -bench Shared -count 6 ./extent | benchstat -col /impl -
func BenchmarkShared_MallocFree(b *testing.B) {
	for _, n := range benchSizes {
		name := "size=" + stats.FormatBytes(uint64(n))
		b.Run(name+"/mode=serial/impl=memkit", func(b *testing.B) {
			s, _ := extent.NewShared()
			b.ReportAllocs()
			for b.Loop() {
				p := s.Malloc(n)
				p[0] = 1
				s.Free(p)
			}
		})
		b.Run(name+"/mode=serial/impl=syncpool", func(b *testing.B) { memtest.BenchSyncPool(b, n) })
		b.Run(name+"/mode=parallel/impl=memkit", func(b *testing.B) {
			s, _ := extent.NewShared()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p := s.Malloc(n)
					p[0] = 1
					s.Free(p)
				}
			})
		})
		b.Run(name+"/mode=parallel/impl=syncpool", func(b *testing.B) { memtest.BenchSyncPoolParallel(b, n) })
	}
}

// BenchmarkAllocator_Borrow is one Borrow per op, with a Recycle every 64.
func BenchmarkAllocator_Borrow(b *testing.B) {
	a := mustNew(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p := a.Borrow(64)
		p[0] = 1
		if i++; i&63 == 0 {
			a.Recycle()
		}
	}
}

// BenchmarkAllocator_Loop8KiB is gomem's MallocLarge pattern: Malloc 8 KiB,
// Free, repeat.
func BenchmarkAllocator_Loop8KiB(b *testing.B) {
	a := mustNew(b)
	b.ReportAllocs()
	for b.Loop() {
		p := a.Malloc(8 << 10)
		p[0] = 1
		a.Free(p)
	}
	var s memkit.Stats
	a.PublishStats()
	a.ReadStats(&s)
	b.ReportMetric(float64(s.ReservedBytes), "reserved-B")
}

// BenchmarkAllocator_Random keeps 1,000 allocations of log-uniform random
// sizes from 64 B to 64 KiB live and replaces a random one per op. It
// reports reserved bytes over live bytes at the end (the target is at most
// 1.5), and over the peak of the live bytes: Malloc and Free never give
// blocks back, so reserved memory follows the peak, and the live total
// swings by about a tenth around its mean.
func BenchmarkAllocator_Random(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int, 4096)
	lo, hi := math.Log(64), math.Log(64<<10)
	for i := range sizes {
		sizes[i] = int(math.Exp(lo + r.Float64()*(hi-lo)))
	}
	a := mustNew(b)
	live := make([][]byte, 1000)
	liveBytes := 0
	for i := range live {
		live[i] = a.Malloc(sizes[i])
		liveBytes += sizes[i]
	}
	peak := liveBytes
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		j := int(r.Uint32() % uint32(len(live)))
		liveBytes -= len(live[j])
		a.Free(live[j])
		live[j] = a.Malloc(sizes[i&4095])
		liveBytes += len(live[j])
		peak = max(peak, liveBytes)
		i++
	}
	var s memkit.Stats
	a.PublishStats()
	a.ReadStats(&s)
	b.ReportMetric(float64(s.ReservedBytes)/float64(liveBytes), "reserved/live")
	b.ReportMetric(float64(s.ReservedBytes)/float64(peak), "reserved/peak-live")
}
