package slab

import (
	"fmt"
	"math/bits"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/sysmem"
)

// Pool is funny/slab's interface to a pool of []byte: Alloc(size) returns a
// buffer of length size, Free gives it back. Every pool of the package is a
// Pool, so programs that pick the pool by configuration ("sync" | "atom" |
// "chan" | "lock") keep doing so.
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
// served by make. The buffer is not zeroed. A negative size panics with
// "memkit/bytepool: negative size"; a size the machine cannot allocate now
// (asked of the kernel first, for 64 MiB or more) panics with
// "memkit/bytepool: size ... is more than the machine can allocate now ...",
// where funny/slab ended the process with the runtime's fatal out-of-memory.
func (p pool) Alloc(size int) []byte { return p.p.Get(size) }

// Free gives mem back; mem must keep the start and capacity Alloc gave it.
// It must not be used afterwards. A second Free of an Atom, Chan or Lock
// pool's buffer panics with "memkit/bytepool: double free" instead of
// handing the buffer to two users; a second Free of a Sync pool's buffer
// panics while the buffer is still idle. A buffer the pool did not hand
// out, or one re-sliced past its start, is dropped (counted in
// Stats.BadFrees), never filed into a class.
func (p pool) Free(mem []byte) { p.p.Put(mem) }

// Unwrap returns the bytepool.Pool underneath, for ReadStats (what
// funny/slab had no way to see), TryGet and a per-goroutine Cache.
func (p pool) Unwrap() *bytepool.Pool { return p.p }

// AtomPool is funny/slab's lock-free pool: a page of pageSize bytes per class
// reserved up front, the class's buffers (funny/slab's chunks) carved out of
// it, and make once the pages are used up. AtomPool, ChanPool and LockPool
// are now one implementation, a Bounded bytepool.Pool: a ticket per buffer
// in a per-P sync.Pool, no lock and no locked instruction per Alloc or
// Free, no allocation once warm; funny/slab's three locking schemes are
// gone. It is safe for concurrent use by multiple goroutines and must be
// created with NewAtomPool.
type AtomPool struct{ pool }

// ChanPool is funny/slab's channel-based pool, now the same pool as AtomPool.
type ChanPool struct{ pool }

// LockPool is funny/slab's mutex-based pool, now the same pool as AtomPool.
type LockPool struct{ pool }

// SyncPool is funny/slab's sync.Pool-based pool: an Elastic bytepool.Pool,
// whose buffers live on the Go heap and go back to the GC within two
// seconds once idle (bytepool's Elastic retention rule), without
// sync.Pool's boxing allocation per Free (funny/slab's SyncPool cost 32 B
// and one allocation per Alloc/Free pair). It is safe for concurrent use by
// multiple goroutines; Alloc and Free never allocate once warm. It must be
// created with NewSyncPool.
type SyncPool struct{ pool }

// NewAtomPool returns a pool of buffers from minSize to maxSize bytes, each
// class growing by factor, with a page of pageSize bytes reserved per class.
//
// Classes are powers of two from minSize (rounded up to a power of two of
// at least 8) to maxSize (rounded up to a power of two), for any factor: a
// factor above 2 gives finer classes than funny/slab's, never coarser. A
// request above maxSize is served by make, as before. The pages of all
// classes form one region (classes × pageSize bytes), taken by classes as
// they need it: a busy class may use the pages idle classes would have
// had, so make is needed later than in funny/slab, and never before the
// region is used up.
//
// Parameters funny/slab accepted and then misbehaved with (minSize above
// maxSize, a factor below 2, pageSize smaller than maxSize) panic with
// "memkit/funnyslab: " and the bad parameter, as does a maxSize or pageSize
// past what the machine can hold.
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
// bytes, each class growing by factor; its classes and bad parameters are
// NewAtomPool's.
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
