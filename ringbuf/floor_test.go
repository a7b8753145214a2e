package ringbuf_test

import (
	"sync/atomic"
	"testing"

	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/ringbuf"
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
//   - spsc: a minimal ring for one writer and one reader (Lamport's), with
//     exactly those two stores and the index bookkeeping: not safe for more
//     than one writer or reader.
//   - memkit: a Ring, safe for any number of writers and readers (four
//     locked instructions per pair).
//
// The gap between copies+fences and memkit is the whole cost of the
// ring's bookkeeping; the gap between spsc and memkit, of allowing many
// writers and readers.
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
	b.Run("impl=copies+fences", func(b *testing.B) { memtest.BenchRingFloor(b, seedOps, slots, seedRecord) })
	b.Run("impl=spsc", func(b *testing.B) {
		r := newSPSC(seedSlots, seedRecord)
		rec, p := make([]byte, seedRecord), make([]byte, seedRecord)
		for b.Loop() {
			for i := range seedOps {
				rec[0] = byte(i)
				r.write(rec)
				r.read(p)
			}
		}
	})
	b.Run("impl=memkit", func(b *testing.B) {
		r := mustNew(b, seedSlots, seedRecord, ringbuf.WithPolicy(ringbuf.Overwrite))
		rec, p := make([]byte, seedRecord), make([]byte, seedRecord)
		for b.Loop() {
			for i := range seedOps {
				rec[0] = byte(i)
				r.Write(rec)
				r.Read(p)
			}
		}
	})
}

// spsc is Lamport's ring for one writer and one reader: each side keeps
// its own position and a cached copy of the other's, and publishes its
// position with one atomic store after its copy.
type spsc struct {
	_           [64]byte
	tail        atomic.Uint64
	_           [56]byte
	head        atomic.Uint64
	_           [56]byte
	wpos, whead uint64 // the writer's
	_           [48]byte
	rpos, rtail uint64 // the reader's
	_           [48]byte
	mask, limit uint64
	size        int
	lens        []int
	mem         []byte
}

func newSPSC(slots, size int) *spsc {
	n := 16
	return &spsc{mask: uint64(n - 1), limit: uint64(slots), size: size, lens: make([]int, n), mem: make([]byte, n*size)}
}

func (r *spsc) write(p []byte) bool {
	w := r.wpos
	if w-r.whead >= r.limit {
		if r.whead = r.head.Load(); w-r.whead >= r.limit {
			return false
		}
	}
	i := int(w & r.mask)
	r.lens[i] = copy(r.mem[i*r.size:][:r.size], p)
	r.wpos = w + 1
	r.tail.Store(w + 1)
	return true
}

func (r *spsc) read(p []byte) (int, bool) {
	h := r.rpos
	if h == r.rtail {
		if r.rtail = r.tail.Load(); h == r.rtail {
			return 0, false
		}
	}
	i := int(h & r.mask)
	n := copy(p, r.mem[i*r.size:][:r.lens[i]])
	r.rpos = h + 1
	r.head.Store(h + 1)
	return n, true
}

// TestSPSC_FloorRingIsARing checks that the floor's spsc ring, which
// BenchmarkRing_Floor compares Ring with, does a ring's work: first in,
// first out, full at its limit, empty when drained.
func TestSPSC_FloorRingIsARing(t *testing.T) {
	r := newSPSC(seedSlots, seedRecord)
	p := make([]byte, seedRecord)
	for lap := range 3 {
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
