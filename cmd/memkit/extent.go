package main

import (
	"sync"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/buddy"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/extent"
)

// This file is the range-allocator family: extent.Allocator and
// buddy.Allocator against make, sync.Pool with pointer items and bytepool,
// on the workloads of issue 6. Each workload's "memkit" impl is the
// allocator under study; "bytepool" is memkit's size-class pool.

// extentImpls are compared on every extent workload, in this order.
var extentImpls = []byteImpl{
	{"memkit", func() allocator { return extentAlloc{must(extent.New())} }},
	{"memkit-shared", func() allocator { return extentShared{must(extent.NewShared())} }},
	{"make", func() allocator { return makeAlloc{} }},
	{"syncpool", func() allocator { return new(syncPool) }},
	{"bytepool", func() allocator { return memkitPool{must(bytepool.New())} }},
}

// buddyRegion is the region of the buddy workloads' allocator. They hold
// one allocation at a time, so its size only sets how many orders the
// first Alloc splits the region through.
const buddyRegion = 64 << 20

// buddyImpls are compared on every buddy workload, in this order.
var buddyImpls = []byteImpl{
	{"memkit", func() allocator { return buddyAlloc{must(buddy.New(buddyRegion, 64))} }},
	{"make", func() allocator { return makeAlloc{} }},
	{"syncpool", func() allocator { return new(syncPool) }},
	{"bytepool", func() allocator { return memkitPool{must(bytepool.New())} }},
}

// extentAlloc is an extent.Allocator: Malloc and Free. Its ReadStats makes
// it a memkit.StatsSource.
type extentAlloc struct{ *extent.Allocator }

func (a extentAlloc) get(n int) ([]byte, any) { return a.Malloc(n), nil }
func (a extentAlloc) put(b []byte, _ any)     { a.Free(b) }

// extentShared is an extent.Shared: Malloc and Free of up to 64 KiB on its
// lock-free front cache, larger ones on its sharded Allocators.
type extentShared struct{ *extent.Shared }

func (a extentShared) get(n int) ([]byte, any) { return a.Malloc(n), nil }
func (a extentShared) put(b []byte, _ any)     { a.Free(b) }

// buddyAlloc is a buddy.Allocator. Its region is sized for every workload,
// so Alloc does not fail; if it did, the workload would index an empty
// slice and stop.
type buddyAlloc struct{ *buddy.Allocator }

func (a buddyAlloc) get(n int) ([]byte, any) {
	b, _ := a.Alloc(n)
	return b, nil
}
func (a buddyAlloc) put(b []byte, _ any) { a.Free(b) }

// extentSizes are the sizes of RandomLive and BuddyAllocFree/dist=loguniform:
// log-uniform from 64 B to 64 KiB, made on first use so that init allocates
// nothing.
var extentSizes = sync.OnceValue(func() []int { return logUniformSizes(64, 64<<10) })

// borrowBatch is how many Borrows BorrowRecycle makes between Recycles.
const borrowBatch = 64

// extentLive is how many allocations RandomLive keeps live.
const extentLive = 1000

func init() {
	for _, n := range []int{64, 4 << 10, 64 << 10} {
		for _, im := range extentImpls {
			register(bench{workload: "ExtentMallocFree/size=" + sizeName(n), impl: im.name,
				run: func(b *testing.B) { getPut(b, im.new(), []int{n}) }})
		}
	}
	// The parallel workload has no single-goroutine Allocator: its "memkit"
	// is the Shared allocator, so the ratio column compares with it.
	workloadDocs["ExtentMallocFreeParallel"] = "the Shared extent allocator's Malloc and Free of one size on every P at once"
	for _, n := range []int{64, 4 << 10, 64 << 10} {
		w := "ExtentMallocFreeParallel/size=" + sizeName(n)
		register(
			bench{workload: w, impl: "memkit", run: func(b *testing.B) { getPutParallel(b, extentShared{must(extent.NewShared())}, n) }},
			bench{workload: w, impl: "syncpool", run: func(b *testing.B) { getPutParallel(b, new(syncPool), n) }},
			bench{workload: w, impl: "bytepool", run: func(b *testing.B) { getPutParallel(b, memkitPool{must(bytepool.New())}, n) }},
		)
	}
	for _, im := range extentImpls {
		register(bench{workload: "ExtentRandomLive/live=1000", impl: im.name,
			run: func(b *testing.B) { randomLive(b, im.new(), extentSizes(), extentLive) }})
	}
	register(
		bench{workload: "ExtentBorrowRecycle/size=64B", impl: "memkit",
			run: func(b *testing.B) { borrowRecycle(b, 64) }},
		bench{workload: "ExtentBorrowRecycle/size=64B", impl: "make",
			run: func(b *testing.B) { getPut(b, makeAlloc{}, []int{64}) }},
	)
	for _, im := range extentImpls {
		register(bench{workload: "ExtentLoop/size=8KiB", impl: im.name,
			run: func(b *testing.B) { getPut(b, im.new(), []int{8 << 10}) }})
	}
	for _, n := range []int{64, 4 << 10} {
		for _, im := range buddyImpls {
			register(bench{workload: "BuddyAllocFree/size=" + sizeName(n), impl: im.name,
				run: func(b *testing.B) { getPut(b, im.new(), []int{n}) }})
		}
	}
	for _, im := range buddyImpls {
		register(bench{workload: "BuddyAllocFree/dist=loguniform", impl: im.name,
			run: func(b *testing.B) { getPut(b, im.new(), extentSizes()) }})
	}
}

// borrowRecycle is BorrowRecycle: Borrow n bytes and touch them, with a
// Recycle every borrowBatch Borrows; ns/op is per Borrow, Recycle included.
func borrowRecycle(b *testing.B, n int) {
	a := must(extent.New())
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p := a.Borrow(n)
		p[0] = 1
		if i%borrowBatch == borrowBatch-1 {
			a.Recycle()
		}
	}
}

// randomLive is RandomLive: keep live allocations of the sizes in sizes
// (tableLen of them), and per op free a pseudo-random one and allocate the
// next size in its place. An allocator that reports memkit.Stats also
// reports its reserved bytes over the live bytes at the end
// (reserved/live; the target is at most 1.5) and over the peak of
// the live bytes during the run (reserved/peak-live): an allocator that
// keeps what it reserved follows the peak, and the live total swings by
// about a tenth around its mean.
func randomLive(b *testing.B, a allocator, sizes []int, live int) {
	l, release := local(a)
	defer release()
	held := make([]buf, live)
	liveBytes := 0
	for i := range held {
		p, h := l.get(sizes[i%len(sizes)])
		held[i] = buf{p, h}
		liveBytes += len(p)
	}
	peak := liveBytes
	mask := len(sizes) - 1
	x := uint32(2463534242)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		j := int(x % uint32(live))
		liveBytes -= len(held[j].b)
		l.put(held[j].b, held[j].h)
		p, h := l.get(sizes[i&mask])
		p[0] = 1
		held[j] = buf{p, h}
		liveBytes += len(p)
		peak = max(peak, liveBytes)
	}
	b.StopTimer()
	if s, ok := a.(memkit.StatsSource); ok {
		var st memkit.Stats
		s.ReadStats(&st)
		b.ReportMetric(float64(st.ReservedBytes)/float64(liveBytes), "reserved/live")
		b.ReportMetric(float64(st.ReservedBytes)/float64(peak), "reserved/peak-live")
	}
	for _, h := range held {
		l.put(h.b, h.h)
	}
}
