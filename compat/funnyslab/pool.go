package slab

import (
	"fmt"
	"math/bits"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/sysmem"
)

// Pool is funny/slab's interface to a pool of []byte: Alloc(size) returns a
// buffer of length size, Free gives it back.
type Pool interface {
	Alloc(int) []byte
	Free([]byte)
}

// NoPool is a Pool that does no pooling: Alloc is make, Free does nothing.
// Its zero value is ready to use and safe for concurrent use.
type NoPool struct{}

// Alloc returns make([]byte, size). It panics with "memkit/funnyslab: Alloc
// of n bytes: more than the system can provide" if the machine cannot
// allocate size bytes now, where make would end the process.
func (p *NoPool) Alloc(size int) []byte {
	if size >= 0 && !sysmem.Available(uint64(size)) {
		panic(fmt.Sprintf("memkit/funnyslab: Alloc of %d bytes: more than the system can provide", size))
	}
	return make([]byte, size)
}

// Free does nothing.
func (p *NoPool) Free(_ []byte) {}

// pool is the bytepool.Pool behind every pooling type.
type pool struct{ p *bytepool.Pool }

// Alloc returns a buffer of length size whose capacity is size rounded up to
// its class (locked: append past it reallocates). A size above maxSize is
// served by make. The buffer is not zeroed. A size the machine cannot
// allocate now panics as bytepool's Get does.
func (p pool) Alloc(size int) []byte { return p.p.Get(size) }

// Free gives mem back; mem must keep the start and capacity Alloc gave it.
// It must not be used afterwards.
func (p pool) Free(mem []byte) { p.p.Put(mem) }

// Unwrap returns the bytepool.Pool underneath, for ReadStats, TryGet and a
// per-goroutine Cache.
func (p pool) Unwrap() *bytepool.Pool { return p.p }

// AtomPool is funny/slab's lock-free pool: a page of pageSize bytes per class
// reserved up front, with make beyond it. It is a Bounded bytepool.Pool (see
// the package doc), safe for concurrent use by multiple goroutines; Alloc and
// Free cost one uncontended compare-and-swap and a bit flip, and never allocate while the
// pages last. It must be created with NewAtomPool.
type AtomPool struct{ pool }

// ChanPool is funny/slab's channel-based pool, now the same pool as AtomPool.
type ChanPool struct{ pool }

// LockPool is funny/slab's mutex-based pool, now the same pool as AtomPool.
type LockPool struct{ pool }

// SyncPool is funny/slab's sync.Pool-based pool: an Elastic bytepool.Pool,
// whose buffers live on the Go heap and go back to the GC within two
// seconds once idle (bytepool's Elastic retention rule). It is safe for concurrent use by multiple goroutines;
// Alloc and Free never allocate once warm. It must be created with
// NewSyncPool.
type SyncPool struct{ pool }

// NewAtomPool returns a pool of buffers from minSize to maxSize bytes, each
// class growing by factor, with a page of pageSize bytes reserved per class.
func NewAtomPool(minSize, maxSize, factor, pageSize int) *AtomPool {
	return &AtomPool{newPool("NewAtomPool", minSize, maxSize, factor, pageSize)}
}

// NewChanPool is NewAtomPool, for programs written against ChanPool.
func NewChanPool(minSize, maxSize, factor, pageSize int) *ChanPool {
	return &ChanPool{newPool("NewChanPool", minSize, maxSize, factor, pageSize)}
}

// NewLockPool is NewAtomPool, for programs written against LockPool.
func NewLockPool(minSize, maxSize, factor, pageSize int) *LockPool {
	return &LockPool{newPool("NewLockPool", minSize, maxSize, factor, pageSize)}
}

// NewSyncPool returns an elastic pool of buffers from minSize to maxSize
// bytes, each class growing by factor.
func NewSyncPool(minSize, maxSize, factor int) *SyncPool {
	return &SyncPool{newPool("NewSyncPool", minSize, maxSize, factor, 0)}
}

// newPool builds the bytepool.Pool for funny/slab's parameters: Bounded with a
// page per class when pageSize > 0, Elastic otherwise. It panics naming the
// bad parameter.
func newPool(fn string, minSize, maxSize, factor, pageSize int) pool {
	bad := func(format string, args ...any) {
		panic(fmt.Sprintf("memkit/funnyslab: %s: "+format, append([]any{fn}, args...)...))
	}
	switch {
	case minSize <= 0:
		bad("minSize %d must be positive", minSize)
	case maxSize < minSize:
		bad("maxSize %d < minSize %d", maxSize, minSize)
	case factor < 2:
		bad("factor %d must be at least 2", factor)
	case pageSize < 0 || (pageSize > 0 && pageSize < maxSize):
		bad("pageSize %d must hold at least one chunk of maxSize %d", pageSize, maxSize)
	}
	lo, hi := max(ceilPow2(minSize), 8), max(ceilPow2(maxSize), 8)
	opts := []bytepool.Option{
		bytepool.WithMinSize(lo), bytepool.WithMaxSize(hi), bytepool.WithClassesPerDoubling(1),
	}
	if pageSize > 0 {
		classes := bits.Len(uint(hi)) - bits.Len(uint(lo)) + 1
		opts = append(opts, bytepool.WithPolicy(bytepool.Bounded),
			bytepool.WithBudget(int64(classes)*int64(max(pageSize, regionSlab))))
	}
	p, err := bytepool.New(opts...)
	if err != nil {
		bad("%v", err)
	}
	return pool{p}
}

// regionSlab is the unit a Bounded bytepool.Pool gives each class of its
// region; a page smaller than it is budgeted as one.
const regionSlab = 64 << 10

// ceilPow2 returns the smallest power of two >= n, for n >= 1.
func ceilPow2(n int) int { return 1 << bits.Len(uint(n-1)) }
