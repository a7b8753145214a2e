package grpcpool_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/grpcpool"
	"github.com/memkit/memkit/grpcpool/grpctest"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/stats"
	"google.golang.org/grpc"
)

func TestPool_GetPutAllocatesNothing(t *testing.T) {
	if checked.Enabled || race.Enabled {
		t.Skip("the checked build records a stack per Get; the race detector makes sync.Pool drop headers")
	}
	p, _ := grpcpool.New()
	for _, n := range []int{1 << 10, 16 << 10, 1 << 20, 4 << 20} {
		p.Put(p.Get(n))
		if a := testing.AllocsPerRun(1000, func() {
			h := p.Get(n)
			(*h)[0] = 1
			*h = (*h)[:n/2] // gRPC may put back a prefix
			p.Put(h)
		}); a != 0 {
			t.Errorf("size=%d: %v allocs per Get+Put", n, a)
		}
	}
}

// TestPool_LockedClassesAllocateNothingPerGC: a Get+Put of LockedFrom
// bytes or more allocates nothing across GC cycles (its class keeps idle
// buffers under a mutex, not in a sync.Pool, whose per-P storage each cycle
// makes it allocate again).
func TestPool_LockedClassesAllocateNothingPerGC(t *testing.T) {
	if checked.Enabled || race.Enabled {
		t.Skip("the checked build records a stack per Get; the race detector makes sync.Pool drop headers")
	}
	p, _ := grpcpool.New()
	for _, n := range []int{grpcpool.LockedFrom, 64 << 10, 1 << 20} {
		p.Put(p.Get(n))
		if a := testing.AllocsPerRun(20, func() {
			runtime.GC()
			p.Put(p.Get(n))
		}); a != 0 {
			t.Errorf("size=%d: %v allocs per GC cycle and Get+Put", n, a)
		}
	}
}

func TestPool_GetLengthsAndLockedCapacity(t *testing.T) {
	p, _ := grpcpool.New()
	for _, n := range []int{0, 1, 1000, 1 << 20, grpcpool.DefaultMaxSize, grpcpool.DefaultMaxSize + 1} {
		h := p.Get(n)
		if len(*h) != n || cap(*h) < n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(*h), cap(*h))
		}
		p.Put(h)
	}
	p.Put(nil) // ignored
}

// TestPool_RealServerAndClient runs unary and streaming RPCs of 1 KiB to
// 4 MiB through a real gRPC server and client on loopback, both using the
// pool, from several goroutines, and verifies every message.
func TestPool_RealServerAndClient(t *testing.T) {
	bp, _ := bytepool.New(bytepool.WithMaxSize(grpcpool.DefaultMaxSize))
	p, _ := grpcpool.New(grpcpool.WithBytePool(bp))
	conn := grpctest.Start(t, p)
	sizes := []int{1 << 10, 3000, 16 << 10, 100_000, 1 << 20, 4 << 20}
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out []byte
			for k, n := range sizes {
				in := make([]byte, n)
				grpctest.Fill(in, g*100+k)
				if err := conn.Invoke(ctx, grpctest.UnaryMethod, &in, &out); err != nil {
					t.Errorf("unary %d: %v", n, err)
					return
				}
				if !bytes.Equal(in, out) {
					t.Errorf("unary %d: the echo differs", n)
				}
			}
			stream, err := conn.NewStream(ctx, grpctest.StreamDesc, grpctest.StreamMethod)
			if err != nil {
				t.Error(err)
				return
			}
			for k := 0; k < 2*len(sizes); k++ {
				n := sizes[(k+g)%len(sizes)]
				in := make([]byte, n)
				grpctest.Fill(in, 1000+g*100+k)
				if err := stream.SendMsg(&in); err != nil {
					t.Errorf("stream send %d: %v", n, err)
					return
				}
				if err := stream.RecvMsg(&out); err != nil {
					t.Errorf("stream recv %d: %v", n, err)
					return
				}
				if !bytes.Equal(in, out) {
					t.Errorf("stream message %d of %d bytes differs", k, n)
				}
			}
			stream.CloseSend()
		}()
	}
	wg.Wait()
	var st stats.Stats
	p.ReadStats(&st)
	if st.Grows == 0 || st.BadFrees != 0 {
		t.Fatalf("gRPC did not use the pool as expected: %d buffers made, %d bad Puts", st.Grows, st.BadFrees)
	}
}

func Example() {
	p, err := grpcpool.New()
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(p.ServerOption()) // experimental.BufferPool(p)
	defer srv.Stop()
	_ = p.DialOption() // for grpc.NewClient: experimental.WithBufferPool(p)
	h := p.Get(64 << 10)
	fmt.Println(len(*h))
	p.Put(h)
	// Output: 65536
}

// The default pool's counts are estimates and say so; a pool given a
// bytepool built WithExactStats, as ReadStats's doc says, counts exactly:
// 2,000 Get+Put of 64 KiB show 2,000 allocations, not "allocs 0, grows 1".
func TestPool_ExactStatsThroughWithBytePool(t *testing.T) {
	def, _ := grpcpool.New()
	bp, err := bytepool.New(bytepool.WithMaxSize(grpcpool.DefaultMaxSize), bytepool.WithExactStats())
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := grpcpool.New(grpcpool.WithBytePool(bp))
	for _, p := range []*grpcpool.Pool{def, exact} {
		for range 2000 {
			p.Put(p.Get(64 << 10))
		}
	}
	var s stats.Stats
	def.ReadStats(&s)
	if !s.Estimated {
		t.Fatalf("the default pool's stats are not marked estimated: %v", &s)
	}
	exact.ReadStats(&s)
	if s.Estimated || s.Allocs != 2000 || s.Frees != 2000 || s.LiveObjects != 0 {
		t.Fatalf("WithBytePool(WithExactStats): estimated %v, %v; want 2000 exact allocs and frees", s.Estimated, &s)
	}
}
