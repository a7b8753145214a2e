package bytepool

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// A shard is one of the pool's independent sets of free lists. A goroutine
// picks its shard from its own stack address (see [Pool.shard]), so a
// goroutine keeps hitting the same, cache-warm shard, and goroutines running
// on different Ps rarely meet on one. A shard is guarded by a one-word
// spinlock held only for a pop or a push (or a batch move to the depot):
// uncontended it costs one CAS and one store, which is what makes the shared
// pool cheaper than a sync.Pool round trip.
type shard struct {
	mu    atomic.Uint32
	lists []freeList // one per class

	// Pool-wide counters attributed to this shard; guarded by mu.
	oversizeAllocs uint64
	oversizeFrees  uint64
	oversizeBytes  uint64 // wraps: summed over shards, it is the live oversize bytes
	fallbacks      uint64
	failures       uint64
	badFrees       uint64

	_ [64]byte // keep neighbouring shards off this shard's cache lines
}

// freeList is one class's free stack in one shard, with that class's
// counters for the operations the shard served. Guarded by the shard's mu.
type freeList struct {
	bufs   []unsafe.Pointer // idle buffers; cap is the class's magazine size
	allocs uint64
	frees  uint64
	grows  uint64
	// heapLive wraps: summed over shards, it is the number of a Bounded
	// pool's heap fallback buffers of this class that are live.
	heapLive uint64
}

func (s *shard) lock() {
	if s.mu.CompareAndSwap(0, 1) {
		return
	}
	s.lockSlow()
}

func (s *shard) lockSlow() {
	for i := 0; ; i++ {
		if s.mu.Load() == 0 && s.mu.CompareAndSwap(0, 1) {
			return
		}
		if i >= 16 {
			// The holder may have been preempted: let it run.
			runtime.Gosched()
		}
	}
}

func (s *shard) unlock() { s.mu.Store(0) }

// pop removes and returns the top buffer, or nil.
func (l *freeList) pop() unsafe.Pointer {
	k := len(l.bufs)
	if k == 0 {
		return nil
	}
	p := l.bufs[k-1]
	l.bufs[k-1] = nil // do not keep a handed-out buffer reachable from here
	l.bufs = l.bufs[:k-1]
	return p
}
