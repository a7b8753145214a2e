package ringbuf_test

import (
	"sync/atomic"
	"testing"

	"github.com/memkit/memkit/internal/memtest"
)

// BenchmarkRing_Floor measures, in one run, what the seed's ring test
// cannot do without, beside the Ring itself: one op is 1000 writes and
// reads of a 64-byte record through 16 slots, as in BenchmarkRing_Seed1000.
//
//   - copies: the two copies alone (record into a slot, slot out to the
//     reader's buffer), with no synchronization at all: not a ring.
//   - copies+fences: the copies plus one atomic store after each, the least
//     any ring that readers on other goroutines can trust must do (publish
//     the record after the copy in; hand the slot back after the copy out).
//     On amd64 every atomic store of Go is a locked XCHG, which waits for
//     the copy's stores to drain.
//   - mpmc: a bare ring for many writers and readers (Vyukov's, the Ring's
//     design) with nothing else: no policy, no waiters, no stats, no checks,
//     and no retries. Like a Ring's Write and Read, its write and read are
//     too big for the compiler to inline, so each is a call.
//   - memkit: a Ring.
//
// On this project's 2-core EPYC VM the minima of 25 alternating runs of
// 50 ms were 9.4 µs (copies), 12.7 (copies+fences), 14.9 (mpmc) and 15.5
// (memkit): the Ring costs 4% more than a bare ring, and both about 1.2
// times the copies and the two stores.
func BenchmarkRing_Floor(b *testing.B) {
	const slots = 16
	b.Run("impl=copies", func(b *testing.B) {
		mem := make([]byte, slots*seedRecord)
		rec, p := make([]byte, seedRecord), make([]byte, seedRecord)
		for b.Loop() {
			for i := range seedOps {
				rec[0] = byte(i)
				s := mem[i%slots*seedRecord:][:seedRecord]
				copy(s, rec)
				copy(p, s)
			}
		}
	})
	b.Run("impl=copies+fences", func(b *testing.B) { memtest.BenchRingFloor(b, seedOps, seedSlots, seedRecord) })
	b.Run("impl=mpmc", func(b *testing.B) {
		r := newBare(seedSlots, seedRecord)
		rec, p := make([]byte, seedRecord), make([]byte, seedRecord)
		for b.Loop() {
			for i := range seedOps {
				rec[0] = byte(i)
				r.write(rec)
				r.read(p)
			}
		}
	})
	b.Run("impl=memkit", benchSeedCopy)
}

// bare is Vyukov's bounded ring for many writers and readers, the Ring's
// design with nothing else: each slot's sequence number says whether
// position p may write it (seq == p) or read it (seq == p+1). A write or
// read that finds the ring full, empty or contended fails instead of
// retrying.
type bare struct {
	_           [64]byte
	tail        atomic.Uint64
	_           [56]byte
	head        atomic.Uint64
	_           [56]byte
	mask, limit uint64
	stride      uint64 // slot size
	slots       []bareSlot
	mem         []byte
}

type bareSlot struct {
	seq atomic.Uint64
	n   int
}

func newBare(limit, size int) *bare {
	const n = 16
	r := &bare{mask: n - 1, limit: uint64(limit), stride: uint64(size), slots: make([]bareSlot, n), mem: make([]byte, n*size)}
	for i := range r.slots {
		r.slots[i].seq.Store(uint64(i))
	}
	return r
}

func (r *bare) write(p []byte) bool {
	t := r.tail.Load()
	s := &r.slots[t&r.mask]
	if s.seq.Load() != t || t-r.head.Load() >= r.limit || !r.tail.CompareAndSwap(t, t+1) {
		return false
	}
	s.n = copy(r.mem[t&r.mask*r.stride:], p)
	s.seq.Store(t + 1)
	return true
}

func (r *bare) read(p []byte) (int, bool) {
	h := r.head.Load()
	s := &r.slots[h&r.mask]
	if s.seq.Load() != h+1 || !r.head.CompareAndSwap(h, h+1) {
		return 0, false
	}
	copy(p[:s.n], r.mem[h&r.mask*r.stride:])
	s.seq.Store(h + r.mask + 1)
	return s.n, true
}

// TestBare_FloorRingIsARing checks that the floor's bare ring, which
// BenchmarkRing_Floor compares Ring with, does a ring's work: first in,
// first out, full at its limit, empty when drained, across laps.
func TestBare_FloorRingIsARing(t *testing.T) {
	r := newBare(seedSlots, seedRecord)
	p := make([]byte, seedRecord)
	for lap := range 5 {
		for i := range seedSlots {
			if !r.write([]byte{byte(lap), byte(i)}) {
				t.Fatalf("lap %d: write %d refused below the limit", lap, i)
			}
		}
		if r.write([]byte{0}) {
			t.Fatalf("lap %d: write accepted past %d records", lap, seedSlots)
		}
		for i := range seedSlots {
			if n, ok := r.read(p); !ok || n != 2 || p[0] != byte(lap) || p[1] != byte(i) {
				t.Fatalf("lap %d: read %d = %v %v, want [%d %d]", lap, i, p[:n], ok, lap, i)
			}
		}
		if _, ok := r.read(p); ok {
			t.Fatalf("lap %d: read from an empty ring", lap)
		}
	}
}
