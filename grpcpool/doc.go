// Package grpcpool plugs memkit's bytepool into gRPC: a
// google.golang.org/grpc/mem.BufferPool whose buffers come from a
// bytepool.Pool, for the buffers gRPC reads messages into and writes them
// from. Pick it for a gRPC server or client whose message buffers should
// stop allocating and go back to the GC after a burst; for
// httputil.ReverseProxy pick httppool, and for buffers in your own code use
// bytepool directly.
//
//	p, _ := grpcpool.New()
//	srv := grpc.NewServer(p.ServerOption())                 // experimental.BufferPool(p)
//	conn, _ := grpc.NewClient(addr, p.DialOption(), ...)    // experimental.WithBufferPool(p)
//
// gRPC's proto codec takes the buffer it marshals a whole message into, and
// the one it gathers a received message into, from the process-wide default
// pool, not from the server's or connection's: to pool those too (the
// largest buffers gRPC takes), install p as the default as well, once, in an
// init function:
//
//	experimental.SetDefaultBufferPool(p)
//
// It lives in a module of its own, so that memkit's core module stays free of
// the gRPC dependency.
//
// Measured with gRPC's own benchmarks against its default pool, it used
// 8–24% less CPU and 1–5% fewer bytes per RPC from 64 KiB messages up; at
// 1 KiB it tied (CPU 0.97–1.00×, the same allocations); allocations per RPC
// were within run-to-run noise of the default's (some cases more, some
// fewer); and it gives memory back after a burst where the default keeps
// it. The repository's docs/grpc-and-http.md has the tables, the losses and
// the commands.
package grpcpool
