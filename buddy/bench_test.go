package buddy_test

import (
	"math/rand/v2"
	"testing"

	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/stats"
)

var benchSizes = []int{64, 4 << 10, 64 << 10}

// BenchmarkAllocator_AllocFree is one Alloc and one Free per op on a 64 MiB
// region, against sync.Pool's Get+Put of a *[]byte:
//
//	go test -run '^$' -bench AllocFree -count 6 ./buddy | benchstat -col /impl -
func BenchmarkAllocator_AllocFree(b *testing.B) {
	for _, n := range benchSizes {
		b.Run("size="+stats.FormatBytes(uint64(n))+"/impl=memkit", func(b *testing.B) {
			a := mustNew(b, 64<<20, 64)
			b.ReportAllocs()
			for b.Loop() {
				p, _ := a.Alloc(n)
				p[0] = 1
				a.Free(p)
			}
		})
		b.Run("size="+stats.FormatBytes(uint64(n))+"/impl=syncpool", func(b *testing.B) { memtest.BenchSyncPool(b, n) })
	}
}

// BenchmarkAllocator_Random keeps 1,000 blocks of random sizes from 64 B to
// 64 KiB live and replaces a random one per op.
func BenchmarkAllocator_Random(b *testing.B) {
	a := mustNew(b, 256<<20, 64)
	r := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int, 4096)
	for i := range sizes {
		sizes[i] = 64 << r.IntN(11)
		sizes[i] += r.IntN(sizes[i])
		sizes[i] = min(sizes[i], 64<<10)
	}
	live := make([][]byte, 1000)
	for i := range live {
		live[i] = mustAlloc(b, a, sizes[i])
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		j := i % len(live)
		a.Free(live[j])
		live[j], _ = a.Alloc(sizes[i&4095])
		i++
	}
}
