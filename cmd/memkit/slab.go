package main

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/ringbuf"
	"github.com/memkit/memkit/slab"
)

// This file is the slab family: slab.Arena against sync.Pool and bytepool,
// chains of slab chunks against buffers made on the heap, and ringbuf against
// a channel and the seed's mutex ring.

// slabSizes are the request sizes of SlabAllocFree.
var slabSizes = []int{64, 512, 4 << 10}

// chainTotal and chainChunk are SlabChain's shape: a 64 MiB payload in
// 64 KiB chunks, written and read back once per op.
const chainTotal, chainChunk = 64 << 20, 64 << 10

// The seed's ring test: 1000 writes and reads of a 64-byte record through
// a 10-slot ring; one op is all 1000.
const ringOps, ringSlots, ringRecord = 1000, 10, 64

func init() {
	for _, n := range slabSizes {
		w := "SlabAllocFree/size=" + sizeName(n)
		register(
			bench{workload: w, impl: "memkit", run: func(b *testing.B) { arenaAllocFree(b, n) }},
			bench{workload: w, impl: "memkit-shared", run: func(b *testing.B) { sharedAllocFree(b, n) }},
			bench{workload: w, impl: "syncpool", run: func(b *testing.B) { syncPoolGetPut(b, n) }},
			bench{workload: w, impl: "bytepool", run: func(b *testing.B) { bytepoolGetPut(b, n) }},
		)
	}
	// The parallel workload has no single-goroutine Arena: its "memkit"
	// is the Shared arena, so the ratio column compares with it.
	for _, n := range slabSizes {
		w := "SlabAllocFreeParallel/size=" + sizeName(n)
		register(
			bench{workload: w, impl: "memkit", run: func(b *testing.B) { sharedAllocFreeParallel(b, n) }},
			bench{workload: w, impl: "syncpool", run: func(b *testing.B) { getPutParallel(b, new(syncPool), n) }},
			bench{workload: w, impl: "bytepool", run: func(b *testing.B) { getPutParallel(b, memkitPool{must(bytepool.New())}, n) }},
		)
	}
	w := "SlabFanOut/subscribers=50"
	workloadDocs["SlabFanOut"] = "a 4KiB Shared slab chunk handed to 50 subscribers with AddRefN, then 51 DecRefs"
	register(
		bench{workload: w, impl: "memkit", run: sharedFanOut},
		bench{workload: w, impl: "syncpool-atomic", run: syncPoolFanOut},
	)
	w = "SlabChain/size=" + sizeName(chainTotal)
	register(
		bench{workload: w, impl: "memkit", run: chainArena},
		bench{workload: w, impl: "heap-chunks", run: chainHeap},
		bench{workload: w, impl: "floor", run: chainFloor},
	)
	w = "RingSeed/ops=1000"
	register(
		bench{workload: w, impl: "memkit", run: ringCopy},
		bench{workload: w, impl: "memkit-lend", run: ringLend},
		bench{workload: w, impl: "chan", run: ringChan},
		bench{workload: w, impl: "mutex-copy", run: ringMutex},
		bench{workload: w, impl: "floor", run: ringFloor},
	)
}

// arenaAllocFree is SlabAllocFree on an Arena: Alloc, touch, DecRef.
func arenaAllocFree(b *testing.B, n int) {
	a := must(slab.NewArena(64, 1<<20, 2, nil))
	a.DecRef(a.Alloc(n)) // the first slab of the class is not the steady state
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p := a.Alloc(n)
		p[0] = 1
		a.DecRef(p)
	}
}

// sharedAllocFree is SlabAllocFree on a Shared arena, on one goroutine.
func sharedAllocFree(b *testing.B, n int) {
	sh := must(slab.NewShared(64, 1<<20, 2, nil))
	sh.DecRef(sh.Alloc(n))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p := sh.Alloc(n)
		p[0] = 1
		sh.DecRef(p)
	}
}

// sharedAllocFreeParallel is SlabAllocFreeParallel: sharedAllocFree on
// GOMAXPROCS goroutines at once.
func sharedAllocFreeParallel(b *testing.B, n int) {
	sh := must(slab.NewShared(64, 1<<20, 2, nil))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p := sh.Alloc(n)
			p[0] = 1
			sh.DecRef(p)
		}
	})
}

// fanOut is SlabFanOut's shape: one 4 KiB frame handed to 50 subscribers,
// each of which drops its reference, and the publisher drops its own; one
// op is the whole frame.
const fanOut, fanOutFrame = 50, 4 << 10

// sharedFanOut is SlabFanOut on a Shared arena: Alloc, AddRefN for the
// subscribers, their DecRefs and the publisher's.
func sharedFanOut(b *testing.B) {
	sh, err := slab.NewShared(64, 1<<20, 2, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		frame := sh.Alloc(fanOutFrame)
		frame[0] = 1
		sh.AddRefN(frame, fanOut)
		for range fanOut + 1 {
			sh.DecRef(frame)
		}
	}
}

// syncPoolFanOut is SlabFanOut on a sync.Pool of frames with an atomic
// reference count, the hand-written way.
func syncPoolFanOut(b *testing.B) {
	type frame struct {
		buf  []byte
		refs atomic.Int32
	}
	sp := sync.Pool{New: func() any { return &frame{buf: make([]byte, fanOutFrame)} }}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		f := sp.Get().(*frame)
		f.buf[0] = 1
		f.refs.Store(1 + fanOut)
		for range fanOut + 1 {
			if f.refs.Add(-1) == 0 {
				sp.Put(f)
			}
		}
	}
}

// syncPoolGetPut is SlabAllocFree on a sync.Pool of pointers to buffers of
// one size, the usual hand-written pool.
func syncPoolGetPut(b *testing.B, n int) {
	sp := sync.Pool{New: func() any { s := make([]byte, n); return &s }}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		bp := sp.Get().(*[]byte)
		(*bp)[0] = 1
		sp.Put(bp)
	}
}

func bytepoolGetPut(b *testing.B, n int) {
	p := must(bytepool.New())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf := p.Get(n)
		buf[0] = 1
		p.Put(buf)
	}
}

// chainPayload is SlabChain's source and destination.
var chainPayload = struct {
	once     sync.Once
	src, dst []byte
}{}

func payload() (src, dst []byte) {
	chainPayload.once.Do(func() {
		chainPayload.src = make([]byte, chainTotal)
		chainPayload.dst = make([]byte, chainTotal)
		for i := range chainPayload.src {
			chainPayload.src[i] = byte(i * 7)
		}
	})
	return chainPayload.src, chainPayload.dst
}

// chainArena writes the payload into a chain of 64 KiB arena chunks with a
// ChainWriter, reads it back with a ChainReader, and drops the head. The
// arena keeps its free slabs (WithIdleSlabs), as a long-lived one would.
func chainArena(b *testing.B) {
	src, dst := payload()
	a := must(slab.NewArena(chainChunk, 1<<20, 2, nil, slab.WithIdleSlabs(chainTotal>>20)))
	w := slab.NewChainWriter(a, chainChunk)
	r := slab.NewChainReader(a, nil)
	once := func() {
		w.Write(src)
		head := w.Finish()
		r.Reset(head)
		for off := 0; off < len(dst); {
			n, err := r.Read(dst[off:])
			if err != nil {
				b.Fatal(err)
			}
			off += n
		}
		a.DecRef(head)
	}
	once() // the arena's first slabs are not the steady state
	b.SetBytes(chainTotal)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		once()
	}
	b.ReportMetric(float64(chainTotal)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// chainHeap is the baseline: the payload copied into 64 KiB buffers made
// on the heap, read back, and left to the GC.
func chainHeap(b *testing.B) {
	src, dst := payload()
	chunks := make([][]byte, 0, chainTotal/chainChunk)
	b.SetBytes(chainTotal)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		chunks = chunks[:0]
		for off := 0; off < len(src); off += chainChunk {
			c := make([]byte, chainChunk)
			copy(c, src[off:])
			chunks = append(chunks, c)
		}
		for i, c := range chunks {
			copy(dst[i*chainChunk:], c)
		}
	}
	b.ReportMetric(float64(chainTotal)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// chainFloor is not a chain: it copies the payload into one buffer made
// beforehand, 64 KiB at a time, and back out, the memory traffic any write
// and read of the payload makes. The gap between it and memkit is the whole
// cost of the chain; on a machine whose memory bandwidth is shared with
// neighbours, both move together.
func chainFloor(b *testing.B) {
	src, dst := payload()
	mid := make([]byte, chainTotal)
	b.SetBytes(chainTotal)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for off := 0; off < chainTotal; off += chainChunk {
			copy(mid[off:off+chainChunk], src[off:])
		}
		for off := 0; off < chainTotal; off += chainChunk {
			copy(dst[off:], mid[off:off+chainChunk])
		}
	}
	b.ReportMetric(float64(chainTotal)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

func ringCopy(b *testing.B) {
	r := must(ringbuf.New(ringSlots, ringRecord, ringbuf.WithPolicy(ringbuf.Overwrite)))
	rec := make([]byte, ringRecord)
	p := make([]byte, ringRecord)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := range ringOps {
			rec[0] = byte(i)
			r.Write(rec)
			r.Read(p)
		}
	}
}

func ringLend(b *testing.B) {
	r := must(ringbuf.New(ringSlots, ringRecord, ringbuf.WithPolicy(ringbuf.Overwrite)))
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := range ringOps {
			s, _ := r.Reserve(ctx)
			s.Bytes()[0] = byte(i)
			r.Commit(s, ringRecord)
			g, _ := r.Peek()
			r.Release(g)
		}
	}
}

func ringChan(b *testing.B) {
	ch := make(chan []byte, ringSlots)
	rec := make([]byte, ringRecord)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := range ringOps {
			rec[0] = byte(i)
			ch <- rec
			<-ch
		}
	}
}

// ringFloor is not a ring: the two copies of each record (into a slot and
// out of it) and the atomic store after each that any ring whose readers
// may run on other goroutines needs (publish the record; hand the slot
// back), with nothing else. On amd64 each store is a locked instruction
// that waits for the copy before it. The gap between it and memkit is the
// whole cost of the ring's bookkeeping (ringbuf's BenchmarkRing_Floor
// breaks it down further).
func ringFloor(b *testing.B) {
	memtest.BenchRingFloor(b, ringOps, ringSlots, ringRecord)
}

func ringMutex(b *testing.B) {
	r := memtest.NewMutexRing(ringSlots)
	rec := make([]byte, ringRecord)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := range ringOps {
			rec[0] = byte(i)
			r.Write(rec)
			r.Read()
		}
	}
}
