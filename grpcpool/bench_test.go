//go:build unix

package grpcpool_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/memkit/memkit/grpcpool"
	"github.com/memkit/memkit/stats"
	"google.golang.org/grpc/mem"
)

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// impl is a pool compared: gRPC's default (pool nil) or grpcpool, on both
// the server and the client.
type impl struct {
	name string
	pool *grpcpool.Pool
}

func impls(tb testing.TB) []impl {
	p, err := grpcpool.New()
	if err != nil {
		tb.Fatal(err)
	}
	return []impl{{"default", nil}, {"memkit", p}}
}

// poolOf returns im's pool as a mem.BufferPool, nil for gRPC's default.
func (im impl) poolOf() mem.BufferPool {
	if im.pool == nil {
		return nil
	}
	return im.pool
}

// BenchmarkRPC sends one message per op through a real gRPC server and
// client on 127.0.0.1 (unary: a call; stream: a message and its echo on one
// bidirectional stream), with gRPC's default buffer pool and with grpcpool.
// Client and server share the process, so allocs/op, cpu-ns/op (process
// CPU time, both sides) and GCs/10k-RPC count both.
func BenchmarkRPC(b *testing.B) {
	ctx := context.Background()
	for _, kind := range []string{"unary", "stream"} {
		for _, size := range []int{1 << 10, 64 << 10, 1 << 20, 4 << 20} {
			for _, impl := range impls(b) {
				b.Run(fmt.Sprintf("kind=%s/size=%dKiB/impl=%s", kind, size>>10, impl.name), func(b *testing.B) {
					conn := startEcho(b, impl.poolOf())
					in := make([]byte, size)
					fill(in, size)
					out := make([]byte, 0, size)
					var call func()
					if kind == "unary" {
						call = func() {
							if err := conn.Invoke(ctx, unaryMethod, &in, &out); err != nil || len(out) != size {
								b.Fatal(err, len(out))
							}
						}
					} else {
						stream, err := conn.NewStream(ctx, &echoDesc.Streams[0], bidiMethod)
						if err != nil {
							b.Fatal(err)
						}
						defer stream.CloseSend()
						call = func() {
							if err := stream.SendMsg(&in); err != nil {
								b.Fatal(err)
							}
							if err := stream.RecvMsg(&out); err != nil || len(out) != size {
								b.Fatal(err, len(out))
							}
						}
					}
					for i := 0; i < 10; i++ {
						call()
					}
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					cpu := cpuTime()
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						call()
					}
					b.StopTimer()
					cpu = cpuTime() - cpu
					runtime.ReadMemStats(&after)
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
					b.ReportMetric(float64(after.NumGC-before.NumGC)*10000/float64(b.N), "GCs/10k-RPC")
				})
			}
		}
	}
}

// retention is the outcome of growThenIdle.
type retention struct {
	peakHeap, retainedHeap uint64 // HeapInuse above the baseline
	peakPool, retainedPool uint64 // grpcpool's ReservedBytes (memkit only)
	gcs, allocBytes        uint64 // GC cycles and heap bytes allocated while growing
}

// growThenIdle is grpc-go issue 8500's scenario: unary responses of
// ever-growing size (1 MiB to 4 MiB in 16 KiB steps), then no traffic and
// three GC cycles. It reports the heap in use above the baseline at its peak
// and after the cycles, and the pool's own bytes likewise.
func growThenIdle(tb testing.TB, im impl) retention {
	conn := startEcho(tb, im.poolOf())
	p := im.pool
	ctx := context.Background()
	req := make([]byte, 8)
	out := make([]byte, 0, maxMsg)
	var ms runtime.MemStats
	var st stats.Stats
	var r retention
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, gc0, alloc0 := ms.HeapInuse, ms.NumGC, ms.TotalAlloc
	sample := func() {
		runtime.ReadMemStats(&ms)
		r.peakHeap = max(r.peakHeap, ms.HeapInuse-min(base, ms.HeapInuse))
		if p != nil {
			p.ReadStats(&st)
			r.peakPool = max(r.peakPool, st.ReservedBytes)
		}
	}
	for n := 1 << 20; n <= 4<<20; n += 16 << 10 {
		binary.BigEndian.PutUint64(req, uint64(n))
		if err := conn.Invoke(ctx, sizedMethod, &req, &out); err != nil || len(out) != n {
			tb.Fatal(err, len(out))
		}
		sample()
	}
	r.gcs, r.allocBytes = uint64(ms.NumGC-gc0), ms.TotalAlloc-alloc0
	out = nil
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	r.retainedHeap = ms.HeapInuse - min(base, ms.HeapInuse)
	if p != nil {
		p.ReadStats(&st)
		r.retainedPool = st.ReservedBytes
	}
	return r
}

// TestIssue8500_RetainedAfterIdle requires grpcpool to keep at most 10% of
// its peak after the growth stops and three GC cycles pass, and logs the
// heap figures of gRPC's default pool beside it.
func TestIssue8500_RetainedAfterIdle(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("moves about 600 MiB through gRPC")
	}
	for _, impl := range impls(t) {
		r := growThenIdle(t, impl)
		t.Logf("impl=%s: growing: %d GCs, %s allocated; heap in use above baseline: peak %s, after idle and 3 GCs %s (%.1f%%); pool: peak %s, after %s",
			impl.name, r.gcs, stats.FormatBytes(r.allocBytes), stats.FormatBytes(r.peakHeap), stats.FormatBytes(r.retainedHeap),
			100*float64(r.retainedHeap)/float64(max(r.peakHeap, 1)),
			stats.FormatBytes(r.peakPool), stats.FormatBytes(r.retainedPool))
		if impl.pool != nil && r.retainedPool*10 > r.peakPool {
			t.Errorf("grpcpool kept %d of its peak %d bytes after 3 GC cycles; want at most 10%%", r.retainedPool, r.peakPool)
		}
	}
}

// BenchmarkIssue8500 reports growThenIdle's figures as metrics, one scenario
// per op.
func BenchmarkIssue8500(b *testing.B) {
	for _, impl := range impls(b) {
		b.Run("impl="+impl.name, func(b *testing.B) {
			var r retention
			for i := 0; i < b.N; i++ {
				r = growThenIdle(b, impl)
			}
			b.ReportMetric(float64(r.gcs), "GCs-growing")
			b.ReportMetric(float64(r.allocBytes), "alloc-B-growing")
			b.ReportMetric(float64(r.peakHeap), "peak-heap-B")
			b.ReportMetric(float64(r.retainedHeap), "retained-heap-B")
			b.ReportMetric(100*float64(r.retainedHeap)/float64(max(r.peakHeap, 1)), "retained-%")
			if impl.pool != nil {
				b.ReportMetric(float64(r.peakPool), "peak-pool-B")
				b.ReportMetric(float64(r.retainedPool), "retained-pool-B")
			}
		})
	}
}
