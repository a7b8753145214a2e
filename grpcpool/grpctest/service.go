package grpctest

import (
	"context"
	"math"
	"math/rand/v2"
	"net"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/benchmark"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/mem"

	"github.com/memkit/memkit/internal/proc"
	"github.com/memkit/memkit/stats"
)

// gRPC's own benchmark service. grpc-go's driver, benchmark/benchmain, is a
// main package whose only pool flag chooses between gRPC's default pool and
// none, so this drives the packages it is built from instead, the same way:
// benchmark.StartServer's protobuf BenchmarkService on a loopback listener,
// and benchmark.DoUnaryCall or DoStreamingRoundTrip from Concurrency
// callers at once, each call a request and a response of the same size
// (benchmain's -reqSizeBytes and -respSizeBytes). The pool under test is
// the process-wide default (experimental.SetDefaultBufferPool, which
// benchmain sets too, so that the proto codec marshals into it and gathers
// received messages in it) and the server's and connection's pool.

// Concurrency is how many calls ServiceCaller keeps in flight, each on its
// own goroutine (benchmain's -maxConcurrentCalls).
const Concurrency = 8

// Spread are the message sizes of a spread workload: log-uniform from 8 B to
// 1 MiB (as many calls between 8 and 16 bytes as between 512 KiB and 1 MiB),
// drawn with a fixed seed.
var Spread = func() []int {
	r := rand.New(rand.NewPCG(7, 8))
	lo, hi := math.Log(8), math.Log(1<<20)
	s := make([]int, 1024)
	for i := range s {
		s[i] = int(math.Exp(lo + r.Float64()*(hi-lo)))
	}
	return s
}()

// countingPool counts the Gets of the pool under test, so that a workload
// can tell what share of them made a new buffer. It wraps both pools
// compared, so both pay its atomic add.
type countingPool struct {
	mem.BufferPool
	gets atomic.Uint64
}

func (c *countingPool) Get(n int) *[]byte {
	c.gets.Add(1)
	return c.BufferPool.Get(n)
}

// Service is gRPC's benchmark service started with pool (nil: gRPC's default
// pool) as the default, the server's and the client's pool, and a client
// connection to it. Server, connection and the default pool are put back at
// the end of the test.
type Service struct {
	Client testgrpc.BenchmarkServiceClient
	pool   *countingPool
	src    stats.StatsSource // pool's stats, if it reports any
}

// StartService starts the service. Only one may run at a time: it swaps the
// process-wide default pool.
func StartService(tb testing.TB, pool mem.BufferPool) *Service {
	tb.Helper()
	old := mem.DefaultBufferPool()
	s := &Service{}
	s.src, _ = pool.(stats.StatsSource)
	if pool == nil {
		pool = old
	}
	s.pool = &countingPool{BufferPool: pool}
	experimental.SetDefaultBufferPool(s.pool)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	stop := benchmark.StartServer(benchmark.ServerInfo{Type: "protobuf", Listener: lis},
		experimental.BufferPool(s.pool), grpc.MaxRecvMsgSize(MaxMsg), grpc.MaxSendMsgSize(MaxMsg))
	conn, err := grpc.NewClient(lis.Addr().String(), experimental.WithBufferPool(s.pool),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMsg), grpc.MaxCallSendMsgSize(MaxMsg)))
	if err != nil {
		tb.Fatal(err)
	}
	s.Client = testgrpc.NewBenchmarkServiceClient(conn)
	tb.Cleanup(func() {
		conn.Close()
		stop()
		experimental.SetDefaultBufferPool(old)
	})
	return s
}

// Caller returns a func that makes one RPC of kind "unary" or "stream" for
// caller g (0 <= g < Concurrency) and reports its error; the i-th call of a
// caller sends and receives sizes[i%len(sizes)] bytes. A stream caller
// opens its stream now; it closes at the end of the test.
func (s *Service) Caller(tb testing.TB, kind string, sizes []int) func(g, i int) error {
	tb.Helper()
	if kind == "unary" {
		return func(_, i int) error {
			n := sizes[i%len(sizes)]
			return benchmark.DoUnaryCall(s.Client, n, n)
		}
	}
	streams := make([]testgrpc.BenchmarkService_StreamingCallClient, Concurrency)
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	for g := range streams {
		st, err := s.Client.StreamingCall(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		streams[g] = st
	}
	return func(g, i int) error {
		n := sizes[i%len(sizes)]
		return benchmark.DoStreamingRoundTrip(streams[g], n, n)
	}
}

// MeasureService runs b.N calls spread over Concurrency goroutines, after
// warm calls on each (enough for the pool to reach its steady state), and
// reports beside ns/op, B/op and allocs/op (per RPC, the process's, both
// sides) what MeasureRPC does — cpu-ns/op, GCs/10k-RPC, live-B — and, when
// the pool reports stats, new-buffer-% (the share of the pool's Gets in the
// measured calls that made a new buffer: its Grows over the Gets counted).
func (s *Service) MeasureService(b *testing.B, call func(g, i int) error, warm int) {
	run := func(n int, next *atomic.Int64) {
		var wg sync.WaitGroup
		var failed atomic.Value
		for g := range Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; ; i += Concurrency {
					if next.Add(1) > int64(n) {
						return
					}
					if err := call(g, i); err != nil {
						failed.Store(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	run(warm*Concurrency, &next)
	var before, after runtime.MemStats
	var st stats.Stats
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	gc0 := gcProgress(&before, live)
	live0 := live[0].Value.Uint64()
	if s.src != nil {
		s.src.ReadStats(&st)
	}
	grows, gets := st.Grows, s.pool.gets.Load()
	cpu, _ := proc.CPU()
	b.ReportAllocs()
	b.ResetTimer()
	next.Store(0)
	run(b.N, &next)
	b.StopTimer()
	now, _ := proc.CPU()
	gc1 := gcProgress(&after, live)
	if now -= cpu; now > 0 {
		b.ReportMetric(float64(now.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.ReportMetric((gc1-gc0)*10000/float64(b.N), "GCs/10k-RPC")
	b.ReportMetric(float64(live0+live[0].Value.Uint64())/2, "live-B")
	if s.src != nil {
		s.src.ReadStats(&st)
		if n := s.pool.gets.Load() - gets; n > 0 {
			b.ReportMetric(100*float64(st.Grows-grows)/float64(n), "new-buffer-%")
		}
	}
}
