package grpctest

import (
	"context"
	"encoding/binary"
	"github.com/memkit/memkit/internal/proc"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/memkit/memkit/bytepool"
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
	// the idle time and the GC cycles.
	PeakHeap, RetainedHeap uint64
	// PeakPool and RetainedPool are the pool's ReservedBytes likewise, when
	// the pool reports stats.
	PeakPool, RetainedPool uint64
}

// IdleTime is how long the documented retention rule takes to give back
// what an idle pool of memkit's holds: two of bytepool's 1 s retention
// periods, and a quarter second for the timer that tends the pool.
const IdleTime = 2*bytepool.RetentionPeriod + time.Second/4

// GrowThenIdle runs grpc-go issue 8500's scenario through the echo service
// with pool (nil: gRPC's default): unary responses of ever-growing size,
// 1 MiB to 4 MiB in 16 KiB steps, then no traffic for idle (IdleTime for
// memkit's rule to have given back what it keeps; 0 to measure only what
// GC cycles do) and two GC cycles. If pool implements stats.StatsSource,
// its bytes are measured too.
func GrowThenIdle(tb testing.TB, pool mem.BufferPool, idle time.Duration) Retention {
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
	time.Sleep(idle) // the scenario: no traffic for a while
	for range 2 {
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
// ns/op, B/op and allocs/op, the process CPU time per call (cpu-ns/op, where
// the platform reports it), GC cycles per 10k calls, and the live heap the
// GC marked, averaged over the calls (live-B). The GC cycles count the part
// of a cycle the calls allocated at each end (see gcProgress), so that a run
// of a few hundred large RPCs, a cycle or two, is not rounded to whole
// cycles by where the last one happened to fall.
//
// Read GCs/10k-RPC beside live-B and B/op: with GOGC=100 a cycle starts once
// the program has allocated about as many bytes as the last cycle found
// live, so GC cycles per call are B/op divided by live-B. A pool that keeps
// larger buffers than it hands out (gRPC's default serves a 64 KiB request
// from its 1 MiB tier) raises live-B, and so runs fewer cycles for the same
// bytes allocated: it buys them with memory. [LimitHeap] compares pools at
// the same memory instead.
func MeasureRPC(b *testing.B, call func()) {
	for range 10 {
		call()
	}
	var before, after runtime.MemStats
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	gc0 := gcProgress(&before, live)
	var liveSum uint64
	cpu, _ := proc.CPU()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		call()
		metrics.Read(live)
		liveSum += live[0].Value.Uint64()
	}
	b.StopTimer()
	now, _ := proc.CPU()
	cpu = now - cpu
	gc1 := gcProgress(&after, live)
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.ReportMetric((gc1-gc0)*10000/float64(b.N), "GCs/10k-RPC")
	b.ReportMetric(float64(liveSum)/float64(b.N), "live-B")
}

// gcProgress reads ms and returns the GC cycles completed so far plus the
// fraction of the next one the heap has grown through: the bytes allocated
// since the last cycle over those its goal allows (HeapAlloc-live over
// NextGC-live). live is a one-sample buffer for /gc/heap/live:bytes.
func gcProgress(ms *runtime.MemStats, live []metrics.Sample) float64 {
	runtime.ReadMemStats(ms)
	metrics.Read(live)
	l := live[0].Value.Uint64()
	f := 0.0
	if ms.NextGC > l && ms.HeapAlloc > l {
		f = min(float64(ms.HeapAlloc-l)/float64(ms.NextGC-l), 1)
	}
	return float64(ms.NumGC) + f
}

// LimitHeap makes the GC run on a memory limit instead of GOGC until the end
// of the test: after two GC cycles (which empty sync.Pools, gRPC's default
// pool among them), it turns GOGC off and sets the runtime's memory limit to
// the memory the process then uses plus headroom. Every pool measured after
// it has the same memory for its buffers and the garbage between cycles, so
// GC cycles per call compare the pools at equal memory: the one that holds
// less runs fewer.
func LimitHeap(tb testing.TB, headroom int64) {
	tb.Helper()
	runtime.GC()
	runtime.GC()
	used := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(used)
	limit := int64(used[0].Value.Uint64()-used[1].Value.Uint64()) + headroom
	gogc := debug.SetGCPercent(-1)
	old := debug.SetMemoryLimit(limit)
	tb.Cleanup(func() {
		debug.SetMemoryLimit(old)
		debug.SetGCPercent(gogc)
	})
}
