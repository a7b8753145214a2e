package ringbuf_test

import (
	"context"
	"testing"

	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/ringbuf"
)

// The seed's ring test: 1000 writes and reads of a 64-byte record through
// a 10-slot ring, one op = all 1000, against a channel of []byte and the
// seed's mutex ring that copies each write into a fresh slice.

const seedOps, seedSlots, seedRecord = 1000, 10, 64

func BenchmarkRing_Seed1000(b *testing.B) {
	b.Run("impl=memkit", benchSeedCopy)
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
		r := memtest.NewMutexRing(seedSlots)
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

// benchSeedCopy is the seed's test on a Ring, copying each record in with
// Write and out with Read.
func benchSeedCopy(b *testing.B) {
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
