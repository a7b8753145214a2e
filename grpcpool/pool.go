package grpcpool

import (
	"fmt"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/sysmem"
	"github.com/memkit/memkit/stats"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// LockedFrom is the smallest buffer class the pool's own bytepool keeps
// only under a mutex, never in a sync.Pool (bytepool.WithLockedFrom): 16
// KiB, the HTTP/2 frame size gRPC reads data frames into. A program moving
// messages this large runs a GC every few of them, and after each cycle a
// sync.Pool class allocates its per-P storage and chain blocks again; from
// 16 KiB up a mutex round trip per Get and Put (two locked instructions)
// is nothing next to filling the buffer. Below it, a class stays on its
// sync.Pool, where a Get and Put take no lock.
const LockedFrom = 16 << 10

// DefaultMaxSize is the largest buffer the pool's own bytepool keeps
// (4 MiB, gRPC's default largest received message); larger ones come from
// the heap and go back to the GC.
const DefaultMaxSize = 4 << 20

// Pool is a mem.BufferPool on a bytepool.Pool.
//
// A Pool is safe for concurrent use by multiple goroutines, as gRPC requires.
// The zero value is not usable: create it with New. It must not be copied
// after first use.
//
// Get and Put cost bytepool's Get and Put (see [bytepool.Pool]) plus a pop
// or push of the *[]byte header on a shard of idle headers (one
// uncontended compare-and-swap), and allocate nothing once warm: the pool
// keeps up to 4096 idle headers (96 KiB) however often the GC runs.
// Buffers are rounded up to bytepool's classes, are not zeroed, and live on
// the Go heap; idle ones go back to the GC as bytepool's Elastic retention
// rule says.
//
// Against gRPC's default pool: the default is tiered sync.Pools of 256 B,
// 4 KiB, 16 KiB, 32 KiB and 1 MiB buffers, a request taking the next tier
// up (a 64 KiB message gets a 1 MiB buffer), and one more sync.Pool for every larger size, which
// hands out any idle buffer at least as large as asked for (grpc-go issue
// 8500: a stream of ever-growing messages keeps allocating and holds every
// older buffer until the GC drops them). Get zeroes each buffer. This pool
// instead:
//
//   - rounds sizes up to bytepool's classes (4 per doubling, under 20% lost)
//     up to 4 MiB, gRPC's default largest message, and serves larger ones from
//     the heap without keeping them;
//   - allocates nothing per Get or Put once warm, however often the GC
//     runs (the *[]byte headers are kept too, up to 4096 of them); its
//     classes from LockedFrom (16 KiB) up keep idle buffers under a mutex
//     instead of a sync.Pool, so they allocate nothing per GC cycle either
//     (smaller classes, like every sync.Pool, allocate their per-P storage
//     again after each cycle);
//   - keeps the idle buffers the recent peak of demand needed through GC
//     cycles, and gives the rest back to the GC within two seconds once
//     demand falls (bytepool's Elastic retention rule: a class gives back,
//     each second, what no Get needed during all of it);
//   - does not zero buffers: gRPC writes every byte of a buffer it reads a
//     message into before it reads it. Use WithBytePool with a pool built
//     bytepool.WithZeroing() for zeroed buffers.
//
// Its statistics are the bytepool's: by default Allocs, Frees, LiveObjects
// and InUseBytes are estimates from a 1-in-64 sample of the buffers; see
// [Pool.ReadStats] for exact counts.
type Pool struct {
	bp      *bytepool.Pool
	headers headers // the idle *[]byte headers, each holding nil (headers.go)
}

var _ mem.BufferPool = (*Pool)(nil)

// Option configures a Pool built by New.
type Option func(*config)

type config struct {
	bp *bytepool.Pool
}

// WithBytePool sets the bytepool.Pool the buffers come from. Without it New
// makes one with classes up to DefaultMaxSize (bytepool.WithMaxSize), those
// from LockedFrom up kept under a mutex (bytepool.WithLockedFrom).
func WithBytePool(p *bytepool.Pool) Option { return func(c *config) { c.bp = p } }

// New returns a Pool configured by opts, or an error naming the bad option.
func New(opts ...Option) (*Pool, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.bp == nil {
		bp, err := bytepool.New(bytepool.WithMaxSize(DefaultMaxSize), bytepool.WithLockedFrom(LockedFrom))
		if err != nil {
			return nil, fmt.Errorf("%s%w", prefix, err)
		}
		c.bp = bp
	}
	return &Pool{bp: c.bp}, nil
}

// Get returns a buffer of the given length, behind a *[]byte that gRPC
// hands back to Put. It panics with "memkit/bytepool: negative size" if
// length < 0, and with "memkit/grpcpool: Get(n): more than the system can
// allocate now; lower grpc.MaxRecvMsgSize ..." if length is more than the
// system can allocate now (asked of the kernel before reserving).
//
// mem.BufferPool's Get has no way to fail, and a shorter buffer would make
// gRPC read a message into too little memory, so a size the machine cannot
// serve is a panic: one that says what to do, where make would have ended
// the process with the runtime's unrecoverable "out of memory". gRPC itself
// never asks for more than the receiving side's largest message
// (grpc.MaxRecvMsgSize on a server, grpc.MaxCallRecvMsgSize on a client; 4
// MiB by default): a peer's length field above it is refused with
// ResourceExhausted before any Get. Keep those limits below what the machine
// can serve and Get never panics for gRPC.
func (p *Pool) Get(length int) *[]byte {
	if length >= sysmem.ProbeMin && !sysmem.Available(uint64(length)) {
		panic(fmt.Sprintf(errNoMemory, length))
	}
	h := p.headers.get()
	*h = p.bp.Get(length)
	return h
}

// Panic messages, one prefix for the package's panics.
const (
	prefix       = "memkit/grpcpool: "
	errNoMemory  = prefix + "Get(%d): more than the system can allocate now; lower grpc.MaxRecvMsgSize (server) or grpc.MaxCallRecvMsgSize (client) below what the machine can serve"
	errDoublePut = prefix + "Put of a buffer already put back (its *[]byte holds nil): put each buffer from Get back once"
)

// Put gives back the buffer behind h, which must hold a prefix of a buffer
// from Get (mem.BufferPool's contract: same start and capacity), and reuses
// h. Neither may be used afterwards. A nil h is ignored.
//
// An idle header holds nil, so a second Put of a header still idle in the
// pool panics with "memkit/grpcpool: Put of a buffer already put back" in
// every build: it would have handed one buffer to the next two Gets. A
// second Put after a Get took the header again passes what the new owner's
// own Put will pass, and is not seen.
func (p *Pool) Put(h *[]byte) {
	if h == nil {
		return
	}
	b := *h
	if b == nil {
		panic(errDoublePut)
	}
	*h = nil
	p.bp.Put(b)
	p.headers.put(h)
}

// BytePool returns the bytepool.Pool the buffers come from.
func (p *Pool) BytePool() *bytepool.Pool { return p.bp }

// ReadStats fills *st with the statistics of the bytepool.Pool.
//
// With New's own pool, an Elastic bytepool, Allocs, Frees, LiveObjects and
// InUseBytes are estimates from a 1-in-64 sample of the buffers
// (st.Estimated is true, and the debug page and Prometheus help say so): a
// server that recycles a few buffers may show 0 allocations beside many
// grows. For exact counts give New a pool that counts every Get and Put,
// at one shared atomic add per call:
//
//	bp, _ := bytepool.New(bytepool.WithMaxSize(grpcpool.DefaultMaxSize),
//		bytepool.WithLockedFrom(grpcpool.LockedFrom), bytepool.WithExactStats())
//	p, _ := grpcpool.New(grpcpool.WithBytePool(bp))
func (p *Pool) ReadStats(st *stats.Stats) { p.bp.ReadStats(st) }

// ServerOption returns the server option that makes a gRPC server use p
// (experimental.BufferPool).
func (p *Pool) ServerOption() grpc.ServerOption { return experimental.BufferPool(p) }

// DialOption returns the dial option that makes a gRPC client connection use
// p (experimental.WithBufferPool).
func (p *Pool) DialOption() grpc.DialOption { return experimental.WithBufferPool(p) }
