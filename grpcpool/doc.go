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
// Its statistics are the bytepool's: by default Allocs, Frees, LiveObjects
// and InUseBytes are estimates from a 1-in-64 sample of the buffers; see
// [Pool.ReadStats] for exact counts (WithBytePool of a pool built
// bytepool.WithExactStats).
//
// It lives in a module of its own, so that memkit's core module stays free of
// the gRPC dependency.
//
// # Against gRPC's default pool
//
// gRPC's default pool is tiered sync.Pools of 256 B, 4 KiB, 16 KiB, 32 KiB
// and 1 MiB buffers, a request taking the next tier up (a 64 KiB message
// gets a 1 MiB buffer), and one more sync.Pool for every larger size, which
// hands out any idle buffer at least as large as asked for (grpc-go issue
// 8500: a stream of ever-growing messages keeps allocating and holds every
// older buffer until the GC drops them). Get zeroes each buffer. This pool
// instead:
//
//   - rounds sizes up to bytepool's classes (4 per doubling, under 20% lost)
//     up to 4 MiB, gRPC's default largest message, and serves larger ones from
//     the heap without keeping them;
//   - allocates nothing per Get or Put once warm (the *[]byte headers are
//     pooled too, as gRPC's own are);
//   - gives idle buffers back to the GC within three GC cycles after a
//     burst;
//   - does not zero buffers: gRPC writes every byte of a buffer it reads a
//     message into before it reads it. Use WithBytePool with a pool built
//     bytepool.WithZeroing() for zeroed buffers.
//
// Where the default pool's next tier is much larger than the message (33 KiB
// to 1 MiB), the buffers it keeps make the live heap larger, and with GOGC
// each GC cycle waits for as many bytes more: for the same bytes allocated
// per RPC, a process on the default pool runs fewer GC cycles by holding more
// memory. Under one memory limit the order reverses (BenchmarkRPCEqualHeap).
package grpcpool
