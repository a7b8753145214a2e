// Package httppool gives httputil.ReverseProxy its copy buffers from
// memkit's bytepool: a net/http/httputil.BufferPool, for a proxy that
// without a pool allocates 32 KiB per request and response body. Pick it
// to set ReverseProxy.BufferPool; for gRPC's buffers pick grpcpool
// (a mem.BufferPool), and for []byte buffers in your own code use
// bytepool directly, or buffer for growable buffers.
//
//	p, _ := httppool.New()
//	proxy := httputil.NewSingleHostReverseProxy(target)
//	proxy.BufferPool = p
//
// Get and Put cost a bytepool Get and Put and never allocate (no boxing of
// the slice header, which a sync.Pool of []byte pays on every Put), and idle
// buffers stay warm through GC cycles and go back to the GC within two
// seconds once a burst is over (bytepool's Elastic retention rule).
package httppool

import (
	"fmt"
	"net/http/httputil"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/sysmem"
)

// DefaultSize is the size of the buffers Get returns unless WithSize says
// otherwise: 32 KiB, the buffer ReverseProxy makes when it has no pool.
const DefaultSize = 32 << 10

// Pool is an httputil.BufferPool whose buffers come from a bytepool.Pool.
//
// A Pool is safe for concurrent use by multiple goroutines, as ReverseProxy
// requires. The zero value is not usable: create it with New. It may be
// copied (it is two words referring to the bytepool.Pool).
//
// Get and Put cost what bytepool's do (see [bytepool.Pool]) and never
// allocate once warm. Buffers are not zeroed, live on
// the Go heap, and idle ones are given back to the GC as bytepool's policy
// says; the worst-case overhead is bytepool's class rounding (none for the
// default size, a power of two).
type Pool struct {
	pool *bytepool.Pool
	size int
}

var _ httputil.BufferPool = Pool{}

// Option configures a Pool built by New.
type Option func(*Pool)

// WithSize sets the length of the buffers Get returns (default DefaultSize).
// ReverseProxy copies through the whole buffer, so larger buffers mean fewer
// reads and writes per body. n must be positive, and a size the machine
// can allocate now (asked of the kernel at New for 64 MiB or more): New
// returns an error otherwise, rather than let Get end the process. Get
// still panics with bytepool's message if the machine can no longer serve
// the size when it needs a new buffer.
func WithSize(n int) Option { return func(p *Pool) { p.size = n } }

// WithBytePool sets the bytepool.Pool the buffers come from (default
// bytepool.Default()), for a pool with its own budget or statistics.
func WithBytePool(bp *bytepool.Pool) Option { return func(p *Pool) { p.pool = bp } }

// New returns a Pool configured by opts, or an error naming a bad option.
func New(opts ...Option) (Pool, error) {
	p := Pool{size: DefaultSize}
	for _, o := range opts {
		o(&p)
	}
	if p.size <= 0 {
		return Pool{}, fmt.Errorf("memkit/httppool: WithSize(%d): the size must be positive", p.size)
	}
	if !sysmem.Available(uint64(p.size)) {
		return Pool{}, fmt.Errorf("memkit/httppool: WithSize(%d): more than this machine can allocate now; a copy buffer needs no more than a few MiB", p.size)
	}
	if p.pool == nil {
		p.pool = bytepool.Default()
	}
	return p, nil
}

// Get returns a buffer of the pool's size. It holds what its previous user
// wrote. Give it back with Put.
func (p Pool) Get() []byte { return p.pool.Get(p.size) }

// Put gives back a buffer from Get (its start and capacity as Get returned
// them); it must not be used afterwards. A nil or foreign buffer is dropped
// (see bytepool's Pool.Put).
func (p Pool) Put(b []byte) {
	if b != nil {
		p.pool.Put(b)
	}
}
