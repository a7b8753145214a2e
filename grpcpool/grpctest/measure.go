package grpctest

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/memkit/memkit/stats"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
)

// Caller returns a function that makes one RPC of a size-byte message on
// conn and checks the reply's length: for kind "unary" a call of
// UnaryMethod, for "stream" a message and its echo on one stream of
// StreamMethod (opened now, closed at the end of the test).
func Caller(tb testing.TB, conn *grpc.ClientConn, kind string, size int) func() {
	tb.Helper()
	ctx := context.Background()
	in := make([]byte, size)
	Fill(in, size)
	out := make([]byte, 0, size)
	if kind == "unary" {
		return func() {
			if err := conn.Invoke(ctx, UnaryMethod, &in, &out); err != nil || len(out) != size {
				tb.Fatalf("unary RPC of %d bytes: %v, %d bytes back", size, err, len(out))
			}
		}
	}
	stream, err := conn.NewStream(ctx, StreamDesc, StreamMethod)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stream.CloseSend() })
	return func() {
		if err := stream.SendMsg(&in); err != nil {
			tb.Fatalf("stream send of %d bytes: %v", size, err)
		}
		if err := stream.RecvMsg(&out); err != nil || len(out) != size {
			tb.Fatalf("stream message of %d bytes: %v, %d bytes back", size, err, len(out))
		}
	}
}

// Retention is what GrowThenIdle measured.
type Retention struct {
	// GCs and AllocBytes are the GC cycles and the heap bytes allocated
	// while the responses grew.
	GCs, AllocBytes uint64
	// PeakHeap and RetainedHeap are the heap in use above the baseline
	// (runtime.MemStats.HeapInuse before the first RPC) at its peak and after
	// the idle GC cycles.
	PeakHeap, RetainedHeap uint64
	// PeakPool and RetainedPool are the pool's ReservedBytes likewise, when
	// the pool reports stats.
	PeakPool, RetainedPool uint64
}

// GrowThenIdle runs grpc-go issue 8500's scenario through the echo service
// with pool (nil: gRPC's default): unary responses of ever-growing size,
// 1 MiB to 4 MiB in 16 KiB steps, then no traffic and three GC cycles.
// If pool implements stats.StatsSource, its bytes are measured too.
func GrowThenIdle(tb testing.TB, pool mem.BufferPool) Retention {
	conn := Start(tb, pool)
	src, _ := pool.(stats.StatsSource)
	ctx := context.Background()
	req := make([]byte, 8)
	out := make([]byte, 0, MaxMsg)
	var ms runtime.MemStats
	var st stats.Stats
	var r Retention
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, gc0, alloc0 := ms.HeapInuse, ms.NumGC, ms.TotalAlloc
	for n := 1 << 20; n <= 4<<20; n += 16 << 10 {
		binary.BigEndian.PutUint64(req, uint64(n))
		if err := conn.Invoke(ctx, SizedMethod, &req, &out); err != nil || len(out) != n {
			tb.Fatalf("Sized(%d): %v, %d bytes back", n, err, len(out))
		}
		runtime.ReadMemStats(&ms)
		r.PeakHeap = max(r.PeakHeap, ms.HeapInuse-min(base, ms.HeapInuse))
		if src != nil {
			src.ReadStats(&st)
			r.PeakPool = max(r.PeakPool, st.ReservedBytes)
		}
	}
	r.GCs, r.AllocBytes = uint64(ms.NumGC-gc0), ms.TotalAlloc-alloc0
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	r.RetainedHeap = ms.HeapInuse - min(base, ms.HeapInuse)
	if src != nil {
		src.ReadStats(&st)
		r.RetainedPool = st.ReservedBytes
	}
	return r
}

// Report adds r's figures to b as metrics.
func (r Retention) Report(b *testing.B) {
	b.ReportMetric(float64(r.GCs), "GCs-growing")
	b.ReportMetric(float64(r.AllocBytes), "alloc-B-growing")
	b.ReportMetric(float64(r.PeakHeap), "peak-heap-B")
	b.ReportMetric(float64(r.RetainedHeap), "retained-heap-B")
	b.ReportMetric(100*float64(r.RetainedHeap)/float64(max(r.PeakHeap, 1)), "retained-%")
	if r.PeakPool > 0 {
		b.ReportMetric(float64(r.PeakPool), "peak-pool-B")
		b.ReportMetric(float64(r.RetainedPool), "retained-pool-B")
	}
}

// MeasureRPC runs call b.N times (after 10 warm-up calls) and reports, beside
// ns/op and allocs/op, the process CPU time per call (cpu-ns/op, where the
// platform reports it), GC cycles per 10k calls, and the heap in use at the
// end (heap-B): a pool that keeps larger buffers makes the GC's goal larger,
// and so has fewer cycles for the same bytes allocated.
func MeasureRPC(b *testing.B, call func()) {
	for range 10 {
		call()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		call()
	}
	b.StopTimer()
	cpu = cpuTime() - cpu
	runtime.ReadMemStats(&after)
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.ReportMetric(float64(after.NumGC-before.NumGC)*10000/float64(b.N), "GCs/10k-RPC")
	b.ReportMetric(float64(after.HeapInuse), "heap-B")
}
