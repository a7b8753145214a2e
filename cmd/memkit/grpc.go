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
			bench{workload: w, impl: "memkit", run: func(b *testing.B) { grpcRPC(b, must(grpcpool.New()), c.kind, c.size) }},
			bench{workload: w, impl: "grpc", run: func(b *testing.B) { grpcRPC(b, nil, c.kind, c.size) }},
		)
	}
	// grpc-go issue 8500: responses growing from 1 MiB to 4 MiB, then idle;
	// retained-% is what the heap keeps after three GC cycles.
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

// grpcGrowIdle runs issue 8500's scenario once per op and reports its
// figures.
func grpcGrowIdle(b *testing.B, pool mem.BufferPool) {
	var r grpctest.Retention
	for range b.N {
		r = grpctest.GrowThenIdle(b, pool)
	}
	r.Report(b)
}
