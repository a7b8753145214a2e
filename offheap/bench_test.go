package offheap_test

import (
	"testing"

	"github.com/memkit/memkit/offheap"
	memstats "github.com/memkit/memkit/stats"
)

// BenchmarkAllocFree is one Alloc and one Free per op: a system call pair,
// the cost that makes off-heap memory pay only when it lives long.
func BenchmarkAllocFree(b *testing.B) {
	for _, n := range []int{4 << 10, 1 << 20} {
		b.Run("size="+memstats.FormatBytes(uint64(n)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := offheap.Alloc(n)
				if err != nil {
					b.Fatal(err)
				}
				p[0] = 1
				if err := offheap.Free(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
