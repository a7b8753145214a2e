package main

import (
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/memkit/memkit/internal/memtest"
)

// BenchmarkFloor measures the least a Get+Put of a 4 KiB buffer can cost in
// each design open to bytepool, beside mcache (one sync.Pool per class, the
// issue's reference) and sync.Pool, in one run:
//
//	go -C cmd/memkit test -run '^$' -bench Floor -count 6 | benchstat -col /impl -
//
// The floors do only the memory operations their design cannot avoid, with
// no class checks, no slow path and no misuse checks, so no real pool can
// be faster than its floor:
//
//   - impl=slot: a lock-free one-buffer slot, Swap on Get and
//     CompareAndSwap on Put: the fewest locked instructions (two) any pool
//     shared between goroutines needs without pinning to a P, which only the
//     runtime can do (sync.Pool's procPin, reachable only by go:linkname).
//     Pointer atomics are also calls into the runtime, for the write
//     barrier.
//   - impl=slot-counted: the same, plus the two counters exact Stats need
//     (allocs on Get, frees on Put). Shared between goroutines they must be
//     atomic: two more locked instructions, as many as a spinlock's lock and
//     unlock, which is why the shared pool uses a spinlock. (A slot in front
//     of the shared pool's lock, counting only Gets, measured no faster than
//     the lock alone: 17.5 ns against 19.0, p=0.94.)
//   - impl=stack-inlined: a per-goroutine stack of buffers, looked up by
//     class and popped and pushed with Get and Put inlined into the loop:
//     the floor of [bytepool.Cache], whose real Get and Put cannot be
//     inlined (a call to its slow path alone costs 57 of the inliner's
//     budget of 80).
func BenchmarkFloor(b *testing.B) {
	const n = 4 << 10
	b.Run("impl=mcache", func(b *testing.B) { benchMcache(b, n) })
	b.Run("impl=syncpool", func(b *testing.B) { memtest.BenchSyncPool(b, n) })
	b.Run("impl=memkit", func(b *testing.B) { benchPool(b, n) })
	b.Run("impl=memkit-cache", func(b *testing.B) { benchCache(b, n) })
	b.Run("impl=slot", func(b *testing.B) { benchSlot(b, n, false) })
	b.Run("impl=slot-counted", func(b *testing.B) { benchSlot(b, n, true) })
	b.Run("impl=stack-inlined", func(b *testing.B) {
		s := newFloorStack(n)
		b.ReportAllocs()
		for b.Loop() {
			buf := s.get(n)
			buf[0] = 1
			s.put(buf)
		}
	})
}

// benchSlot is Get+Put of n bytes through a floorSlot, counting allocs and
// frees atomically if counted.
func benchSlot(b *testing.B, n int, counted bool) {
	var s floorSlot
	s.buf.Store(unsafe.SliceData(make([]byte, n)))
	b.ReportAllocs()
	for b.Loop() {
		buf := s.get(n)
		if counted {
			s.allocs.Add(1)
		}
		buf[0] = 1
		s.put(buf)
		if counted {
			s.frees.Add(1)
		}
	}
	if s.allocs.Load() != s.frees.Load() {
		b.Fatal("unbalanced counters")
	}
}

// floorSlot is a one-buffer slot shared between goroutines.
type floorSlot struct {
	buf    atomic.Pointer[byte]
	allocs atomic.Uint64
	frees  atomic.Uint64
}

func (s *floorSlot) get(n int) []byte {
	p := s.buf.Swap(nil)
	if p == nil {
		panic("floor: empty slot")
	}
	return unsafe.Slice(p, n)
}

func (s *floorSlot) put(b []byte) {
	if !s.buf.CompareAndSwap(nil, unsafe.SliceData(b)) {
		panic("floor: full slot")
	}
}

// floorStack is a per-goroutine stack of buffers per class, with a class
// lookup table, as a Cache has; get and put are small enough to inline.
type floorStack struct {
	tab   [257]uint8 // class by (n+255)>>8, up to 64 KiB
	lists [256]floorList
}

type floorList struct {
	n    int
	size int
	bufs [64]unsafe.Pointer
}

func newFloorStack(n int) *floorStack {
	s := new(floorStack)
	for i := range s.tab {
		s.tab[i] = uint8(max(i-1, 0))
	}
	for c := range s.lists {
		s.lists[c].size = (c + 1) << 8
	}
	s.put(make([]byte, n))
	return s
}

func (s *floorStack) get(n int) []byte {
	l := &s.lists[s.tab[uint(n+255)>>8&255]]
	l.n--
	return unsafe.Slice((*byte)(l.bufs[l.n&63]), l.size)[:n]
}

func (s *floorStack) put(b []byte) {
	l := &s.lists[s.tab[uint(cap(b)+255)>>8&255]]
	l.bufs[l.n&63] = unsafe.Pointer(unsafe.SliceData(b))
	l.n++
}
