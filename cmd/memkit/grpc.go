package main

import (
	"testing"

	"github.com/memkit/memkit/grpcpool"
	"github.com/memkit/memkit/grpcpool/grpctest"
	"google.golang.org/grpc/mem"
)

// This file is the gRPC family: a real gRPC server and client on loopback
// with grpcpool as their buffer pool, against gRPC's default pool.

func init() {
	for _, c := range []struct {
		kind string
		size int
	}{{"unary", 64 << 10}, {"unary", 1 << 20}, {"stream", 64 << 10}} {
		w := "GRPC/kind=" + c.kind + "/size=" + sizeName(c.size)
		register(
			bench{workload: w, impl: "memkit", rounds: noisyRounds, run: func(b *testing.B) { grpcRPC(b, must(grpcpool.New()), c.kind, c.size) }},
			bench{workload: w, impl: "grpc", rounds: noisyRounds, run: func(b *testing.B) { grpcRPC(b, nil, c.kind, c.size) }},
		)
	}
	// gRPC's own benchmark service (grpc-go's benchmark packages, as its
	// benchmain driver runs them): Concurrency calls in flight, unary and
	// streaming, at fixed sizes and a spread.
	for _, kind := range []string{"unary", "stream"} {
		for _, sz := range []struct {
			name  string
			sizes []int
		}{{"1KiB", []int{1 << 10}}, {"64KiB", []int{64 << 10}}, {"1MiB", []int{1 << 20}}, {"spread", grpctest.Spread}} {
			w := "GRPCBench/kind=" + kind + "/size=" + sz.name
			register(
				bench{workload: w, impl: "memkit", rounds: noisyRounds, run: func(b *testing.B) { grpcService(b, must(grpcpool.New()), kind, sz.sizes) }},
				bench{workload: w, impl: "grpc", rounds: noisyRounds, run: func(b *testing.B) { grpcService(b, nil, kind, sz.sizes) }},
			)
			if sz.name == "1KiB" {
				register(grpcAgain(w, func(b *testing.B) { grpcService(b, nil, kind, sz.sizes) }))
			}
		}
	}
	// The same at the sizes where gRPC's default pool holds a larger live
	// heap (its 1 MiB tier serves 33 KiB-1 MiB), and so, under GOGC, waits
	// longer between GC cycles: both pools under one memory limit instead.
	for _, kind := range []string{"unary", "stream"} {
		for _, size := range []int{1 << 10, 64 << 10} {
			w := "GRPCBenchEqualHeap/kind=" + kind + "/size=" + sizeName(size)
			register(
				bench{workload: w, impl: "memkit", rounds: noisyRounds, run: func(b *testing.B) { grpcServiceLimited(b, must(grpcpool.New()), kind, size) }},
				bench{workload: w, impl: "grpc", rounds: noisyRounds, run: func(b *testing.B) { grpcServiceLimited(b, nil, kind, size) }},
			)
			if size == 1<<10 {
				register(grpcAgain(w, func(b *testing.B) { grpcServiceLimited(b, nil, kind, size) }))
			}
		}
	}
	// grpc-go issue 8500: responses growing from 1 MiB to 4 MiB, then idle
	// for grpcIdle; retained-% is what the heap keeps after two GC cycles
	// more.
	w := "GRPCGrowIdle/size=1MiB-4MiB"
	register(
		bench{workload: w, impl: "memkit", once: true, run: func(b *testing.B) { grpcGrowIdle(b, must(grpcpool.New())) }},
		bench{workload: w, impl: "grpc", once: true, run: func(b *testing.B) { grpcGrowIdle(b, nil) }},
	)
}

// grpcRPC measures one RPC per op (unary call, or message and echo on a
// stream) with pool on both sides (nil: gRPC's default).
func grpcRPC(b *testing.B, pool mem.BufferPool, kind string, size int) {
	conn := grpctest.Start(b, pool)
	grpctest.MeasureRPC(b, grpctest.Caller(b, conn, kind, size))
}

// grpcService measures one RPC per op of gRPC's benchmark service, with
// pool (nil: gRPC's default) as the process's default pool and on both
// sides; the first 100 calls of each caller warm it up (large messages).
func grpcService(b *testing.B, pool mem.BufferPool, kind string, sizes []int) {
	s := grpctest.StartService(b, pool)
	s.MeasureService(b, s.Caller(b, kind, sizes), 100)
}

// equalHeapRoom is the room above the process's memory that
// GRPCBenchEqualHeap's memory limit leaves for buffers and garbage.
const equalHeapRoom = 16 << 20

// grpcServiceLimited is grpcService with the GC run on a memory limit
// (grpctest.LimitHeap: GOGC off, equalHeapRoom above the memory in use)
// instead of GOGC.
func grpcServiceLimited(b *testing.B, pool mem.BufferPool, kind string, size int) {
	grpctest.LimitHeap(b, equalHeapRoom)
	grpcService(b, pool, kind, []int{size})
}

// grpcIdle is how long GRPCGrowIdle lets the service idle before its GC
// cycles (grpctest.IdleTime: bytepool's two retention periods, by which an
// Elastic pool has given back what no Get needed, and a quarter second for
// its timer). With -short, tests set it to 0.
var grpcIdle = grpctest.IdleTime

// grpcGrowIdle runs issue 8500's scenario once per op and reports its
// figures.
func grpcGrowIdle(b *testing.B, pool mem.BufferPool) {
	var r grpctest.Retention
	for range b.N {
		r = grpctest.GrowThenIdle(b, pool, grpcIdle)
	}
	r.Report(b)
}

// grpcAgain is gRPC's default pool measured a second time in workload w, as
// impl grpc-again: at 1 KiB neither pool allocates per Get or Put once
// warm, and what separates memkit's row from grpc's is the run's noise,
// which grpc against grpc-again, alternating with both in the same slices,
// measures.
func grpcAgain(w string, run func(b *testing.B)) bench {
	return bench{workload: w, impl: "grpc-again", rounds: noisyRounds, run: run}
}
