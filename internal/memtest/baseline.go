package memtest

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"testing"
)

// MutexRing is the ring buffer go-slab's users write by hand (see the seed
// write-up): a mutex around a slice of slots, with a fresh copy of every
// record written, overwriting the oldest when full. It is the baseline
// ringbuf's benchmarks compare with, not something to use.
type MutexRing struct {
	mu          sync.Mutex
	data        [][]byte
	read, write int
	full        bool
}

// NewMutexRing returns a MutexRing of n slots.
func NewMutexRing(n int) *MutexRing { return &MutexRing{data: make([][]byte, n)} }

// Write stores a copy of val, dropping the oldest record if the ring is full.
func (rb *MutexRing) Write(val []byte) {
	rb.mu.Lock()
	if rb.full {
		rb.read = (rb.read + 1) % len(rb.data)
	}
	c := make([]byte, len(val))
	copy(c, val)
	rb.data[rb.write] = c
	rb.write = (rb.write + 1) % len(rb.data)
	rb.full = rb.read == rb.write
	rb.mu.Unlock()
}

// Read returns the oldest record, or false if the ring is empty.
func (rb *MutexRing) Read() ([]byte, bool) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if !rb.full && rb.read == rb.write {
		return nil, false
	}
	v := rb.data[rb.read]
	rb.read = (rb.read + 1) % len(rb.data)
	rb.full = false
	return v, true
}

// BenchRingFloor runs, as b's loop, what the seed's ring test cannot do
// without: ops records of record bytes each copied into a slot of a ring of
// slots slots (rounded up to a power of two, as a ringbuf.Ring rounds them)
// and back out, with an atomic store after each copy, the least any ring
// whose readers may run on other goroutines does (publish the record; hand
// the slot back). It is not a ring, and it does not allocate.
func BenchRingFloor(b *testing.B, ops, slots, record int) {
	n := 1 << bits.Len(uint(max(slots, 2)-1))
	mem := make([]byte, n*record)
	rec, p := make([]byte, record), make([]byte, record)
	var published, freed atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := range ops {
			rec[0] = byte(i)
			s := mem[i&(n-1)*record:][:record]
			copy(s, rec)
			published.Store(uint64(i))
			copy(p, s)
			freed.Store(uint64(i))
		}
	}
}
