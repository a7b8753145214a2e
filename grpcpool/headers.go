package grpcpool

import (
	"sync/atomic"

	"github.com/memkit/memkit/internal/shard"
)

// headers keeps the idle *[]byte headers that Get hands out and Put takes
// back. A sync.Pool would drop them at every other GC cycle, and under
// large messages gRPC runs a GC every few RPCs: each RPC would make its
// headers again. So they wait in headerShards shards of up to
// headersPerShard each (4096 headers, 96 KiB, kept for good: 24 bytes
// each); a header past that goes to the GC. A goroutine tries its home
// shard (internal/shard's stack hint) and then the others, so that headers
// got on one goroutine and put back on another are found.
type headers struct {
	shards [headerShards]headerShard
}

const (
	headerShards    = 16
	headersPerShard = 256
)

type headerShard struct {
	shard.Lock
	n  atomic.Int32 // written under the lock; read without it to skip an empty or full shard
	hs [headersPerShard]*[]byte
	_  shard.Pad
}

// get returns an idle header, or a new one.
func (s *headers) get() *[]byte {
	home := shard.Hint()
	for i := range uintptr(headerShards) {
		sh := &s.shards[(home+i)%headerShards]
		if sh.n.Load() == 0 {
			continue
		}
		sh.Lock.Lock()
		if n := sh.n.Load(); n > 0 {
			h := sh.hs[n-1]
			sh.hs[n-1] = nil
			sh.n.Store(n - 1)
			sh.Unlock()
			return h
		}
		sh.Unlock()
	}
	return new([]byte)
}

// put keeps the idle header h, or drops it if every shard is full.
func (s *headers) put(h *[]byte) {
	home := shard.Hint()
	for i := range uintptr(headerShards) {
		sh := &s.shards[(home+i)%headerShards]
		if sh.n.Load() == headersPerShard {
			continue
		}
		sh.Lock.Lock()
		if n := sh.n.Load(); n < headersPerShard {
			sh.hs[n] = h
			sh.n.Store(n + 1)
			sh.Unlock()
			return
		}
		sh.Unlock()
	}
}
