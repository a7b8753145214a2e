package ringbuf_test

import (
	"context"
	"sync"
	"testing"

	"github.com/memkit/memkit/ringbuf"
)

// The seed's ring test: 1000 writes and reads of a 64-byte record through
// a 10-slot ring, one op = all 1000, against a channel of []byte and the
// seed's mutex ring that copies each write into a fresh slice.

const seedOps, seedSlots, seedRecord = 1000, 10, 64

func BenchmarkRing_Seed1000(b *testing.B) {
	b.Run("impl=memkit", func(b *testing.B) {
		r := mustNew(b, seedSlots, seedRecord, ringbuf.WithPolicy(ringbuf.Overwrite))
		rec := make([]byte, seedRecord)
		p := make([]byte, seedRecord)
		b.ReportAllocs()
		for b.Loop() {
			for i := range seedOps {
				rec[0] = byte(i)
				r.Write(rec)
				r.Read(p)
			}
		}
	})
	b.Run("impl=memkit-lend", func(b *testing.B) {
		r := mustNew(b, seedSlots, seedRecord, ringbuf.WithPolicy(ringbuf.Overwrite))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			for i := range seedOps {
				s, _ := r.Reserve(ctx)
				s.Bytes()[0] = byte(i)
				r.Commit(s, seedRecord)
				g, _ := r.Peek()
				r.Release(g)
			}
		}
	})
	b.Run("impl=chan", func(b *testing.B) {
		ch := make(chan []byte, seedSlots)
		rec := make([]byte, seedRecord)
		b.ReportAllocs()
		for b.Loop() {
			for i := range seedOps {
				rec[0] = byte(i)
				ch <- rec
				<-ch
			}
		}
	})
	b.Run("impl=mutex-copy", func(b *testing.B) {
		r := newMutexRing(seedSlots)
		rec := make([]byte, seedRecord)
		b.ReportAllocs()
		for b.Loop() {
			for i := range seedOps {
				rec[0] = byte(i)
				r.Write(rec)
				r.Read()
			}
		}
	})
}

// mutexRing is the seed's ring: a mutex, and a fresh copy of every write.
type mutexRing struct {
	mu          sync.Mutex
	data        [][]byte
	read, write int
	full        bool
}

func newMutexRing(n int) *mutexRing { return &mutexRing{data: make([][]byte, n)} }

func (rb *mutexRing) Write(val []byte) {
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

func (rb *mutexRing) Read() ([]byte, bool) {
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

// BenchmarkRing_Parallel is Write+Read of a 64-byte record on every P at
// once through one ring.
func BenchmarkRing_Parallel(b *testing.B) {
	r := mustNew(b, 1024, seedRecord, ringbuf.WithPolicy(ringbuf.Overwrite))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rec := make([]byte, seedRecord)
		p := make([]byte, seedRecord)
		for pb.Next() {
			r.Write(rec)
			r.Read(p)
		}
	})
}
