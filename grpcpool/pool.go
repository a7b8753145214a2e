package grpcpool

import (
	"fmt"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/stats"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

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
// keeps up to 1024 idle headers (24 KiB) however often the GC runs. Buffers are rounded up to bytepool's classes,
// are not zeroed, and live on the Go heap; idle ones go back to the GC as
// bytepool's Elastic policy says.
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
// makes one with classes up to DefaultMaxSize (bytepool.WithMaxSize).
func WithBytePool(p *bytepool.Pool) Option { return func(c *config) { c.bp = p } }

// New returns a Pool configured by opts, or an error naming the bad option.
func New(opts ...Option) (*Pool, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.bp == nil {
		bp, err := bytepool.New(bytepool.WithMaxSize(DefaultMaxSize))
		if err != nil {
			return nil, fmt.Errorf("memkit/grpcpool: %w", err)
		}
		c.bp = bp
	}
	return &Pool{bp: c.bp}, nil
}

// Get returns a buffer of the given length, behind a *[]byte that gRPC
// hands back to Put. It panics with "memkit/bytepool: negative size" if
// length < 0.
func (p *Pool) Get(length int) *[]byte {
	h := p.headers.get()
	*h = p.bp.Get(length)
	return h
}

// Put gives back the buffer behind h, which must hold a prefix of a buffer
// from Get (mem.BufferPool's contract: same start and capacity), and reuses
// h. Neither may be used afterwards. A nil h is ignored.
func (p *Pool) Put(h *[]byte) {
	if h == nil {
		return
	}
	b := *h
	*h = nil
	if b != nil {
		p.bp.Put(b)
	}
	p.headers.put(h)
}

// BytePool returns the bytepool.Pool the buffers come from.
func (p *Pool) BytePool() *bytepool.Pool { return p.bp }

// ReadStats fills *st with the statistics of the bytepool.Pool.
func (p *Pool) ReadStats(st *stats.Stats) { p.bp.ReadStats(st) }

// ServerOption returns the server option that makes a gRPC server use p
// (experimental.BufferPool).
func (p *Pool) ServerOption() grpc.ServerOption { return experimental.BufferPool(p) }

// DialOption returns the dial option that makes a gRPC client connection use
// p (experimental.WithBufferPool).
func (p *Pool) DialOption() grpc.DialOption { return experimental.WithBufferPool(p) }
