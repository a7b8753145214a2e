package main

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bytedance/gopkg/lang/mcache"
	libp2p "github.com/libp2p/go-buffer-pool"
	"github.com/valyala/bytebufferpool"
	"google.golang.org/grpc/mem"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/grpcpool/grpctest"
	"github.com/memkit/memkit/stats"
)

// This file is the []byte family: bytepool against make, sync.Pool and the
// buffer pools people use today, on every workload of byteWorkloads.

// allocator is a []byte allocator under test. Every implementation is
// called through this interface, so each pays the same small dispatch cost.
//
// Besides the bytes, get returns a handle that put takes back: for a library
// whose Put wants its own handle (grpc's *[]byte, a
// *bytebufferpool.ByteBuffer), that handle, so that no workload adds an
// allocation the library itself would not make; nil for the others. (Two
// results, not one struct: a returned struct is copied through memory, a
// store-forwarding stall that cost some impls 10 ns.)
type allocator interface {
	get(n int) (b []byte, h any)
	put(b []byte, h any)
}

// buf is a buffer a workload holds: get's two results.
type buf struct {
	b []byte
	h any
}

// A perGoroutine allocator gives each goroutine of a workload its own view,
// such as a bytepool.Cache, and release ends that view. Other allocators are
// shared by all goroutines as they are.
type perGoroutine interface {
	allocator
	local() (a allocator, release func())
}

// local returns the allocator one goroutine of a workload uses, and the
// func that goroutine calls when it is done with it.
func local(a allocator) (allocator, func()) {
	if pg, ok := a.(perGoroutine); ok {
		return pg.local()
	}
	return a, func() {}
}

// byteImpl is one implementation in the []byte comparison.
type byteImpl struct {
	name string
	new  func() allocator // a fresh instance for one benchmark run
}

// boundedBudget is memkit-bounded's budget: room for every workload's
// buffers in flight (Mixed gives each of ~40 classes a 1 MiB slab), except
// BurstIdle's, which is the point of that workload.
const boundedBudget = 64 << 20

// grpcTiers are the tiers of grpc's mem.DefaultBufferPool (256 B, 4 KiB,
// 16 KiB, 32 KiB, 1 MiB), built fresh for every run.
var grpcTiers = []uint8{8, 12, 14, 15, 20}

// byteImpls are compared on every []byte workload, in this order.
var byteImpls = []byteImpl{
	{"memkit", func() allocator { return memkitPool{must(bytepool.New())} }},
	{"memkit-pkg", func() allocator { return memkitDefault{} }},
	{"memkit-cache", func() allocator { return memkitCache{memkitPool{must(bytepool.New())}} }},
	{"memkit-bounded", func() allocator {
		return memkitPool{must(bytepool.New(bytepool.WithPolicy(bytepool.Bounded), bytepool.WithBudget(boundedBudget)))}
	}},
	{"make", func() allocator { return makeAlloc{} }},
	{"syncpool", func() allocator { return new(syncPool) }},
	{"mcache", func() allocator { return mcacheAlloc{} }},
	{"bytebufferpool", func() allocator { return new(bbPool) }},
	{"libp2p", func() allocator { return new(libp2pPool) }},
	{"grpc", func() allocator { return grpcPool{must(mem.NewBinaryTieredBufferPool(grpcTiers...))} }},
}

// memkitPool is a shared *bytepool.Pool. Its ReadStats makes it a
// memkit.StatsSource, which BurstIdle reads.
type memkitPool struct{ *bytepool.Pool }

func (p memkitPool) get(n int) ([]byte, any) { return p.Get(n), nil }
func (p memkitPool) put(b []byte, _ any)     { p.Put(b) }

// memkitDefault is the package-level bytepool.Get and Put.
type memkitDefault struct{}

func (memkitDefault) get(n int) ([]byte, any) { return bytepool.Get(n), nil }
func (memkitDefault) put(b []byte, _ any)     { bytepool.Put(b) }

// memkitCache gives each goroutine its own bytepool.Cache of one pool.
type memkitCache struct{ memkitPool }

func (p memkitCache) local() (allocator, func()) {
	c := p.NewCache()
	return cacheAlloc{c}, c.Release
}

type cacheAlloc struct{ c *bytepool.Cache }

func (c cacheAlloc) get(n int) ([]byte, any) { return c.c.Get(n), nil }
func (c cacheAlloc) put(b []byte, _ any)     { c.c.Put(b) }

// makeAlloc is the baseline without reuse: make, and leave the rest to the GC.
type makeAlloc struct{}

func (makeAlloc) get(n int) ([]byte, any) { return make([]byte, n), nil }
func (makeAlloc) put([]byte, any)         {}

// syncPool is the usual hand-written pool: one sync.Pool of *[]byte (a
// pointer, so Put does not allocate), growing a buffer that is too small.
type syncPool struct{ p sync.Pool }

func (s *syncPool) get(n int) ([]byte, any) {
	bp, _ := s.p.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	return (*bp)[:n], bp
}

func (s *syncPool) put(_ []byte, h any) { s.p.Put(h) }

// mcacheAlloc is bytedance/gopkg's lang/mcache: power-of-two sync.Pools,
// one package-level instance.
type mcacheAlloc struct{}

func (mcacheAlloc) get(n int) ([]byte, any) { return mcache.Malloc(n), nil }
func (mcacheAlloc) put(b []byte, _ any)     { mcache.Free(b) }

// bbPool is valyala/bytebufferpool. It hands out growable ByteBuffers, not
// sized slices, so Get(n) is emulated by growing B to length n: by make when
// it is too small, as append would, but without clearing fresh memory.
type bbPool struct{ p bytebufferpool.Pool }

func (p *bbPool) get(n int) ([]byte, any) {
	bb := p.p.Get()
	if cap(bb.B) < n {
		bb.B = make([]byte, n)
	}
	bb.B = bb.B[:n]
	return bb.B, bb
}

func (p *bbPool) put(_ []byte, h any) { p.p.Put(h.(*bytebufferpool.ByteBuffer)) }

// libp2pPool is libp2p/go-buffer-pool: power-of-two sync.Pools.
type libp2pPool struct{ p libp2p.BufferPool }

func (p *libp2pPool) get(n int) ([]byte, any) { return p.p.Get(n), nil }
func (p *libp2pPool) put(b []byte, _ any)     { p.p.Put(b) }

// grpcPool is grpc's mem tiered buffer pool, which hands out *[]byte.
type grpcPool struct{ p mem.BufferPool }

func (p grpcPool) get(n int) ([]byte, any) {
	bp := p.p.Get(n)
	return *bp, bp
}

func (p grpcPool) put(_ []byte, h any) { p.p.Put(h.(*[]byte)) }

// chanOnly reuses one buffer and never frees it: the cost of
// CrossGoroutine's channel hand-off alone.
type chanOnly struct{ b []byte }

func (c *chanOnly) get(n int) ([]byte, any) {
	if cap(c.b) < n {
		c.b = make([]byte, n)
	}
	return c.b[:n], nil
}

func (*chanOnly) put([]byte, any) {}

// byteWorkload is a workload of the []byte comparison, run against every
// byteImpl and its own extra ones.
type byteWorkload struct {
	name string // "GetPut/size=4KiB"
	once bool   // see bench.once
	// run measures one fresh instance made by newAlloc; it calls newAlloc
	// itself, so that it can choose what the timer and the memory baseline
	// include.
	run   func(b *testing.B, newAlloc func() allocator)
	extra []byteImpl // baselines that only make sense for this workload
}

// sizes are the request sizes of GetPut and GetPutParallel.
var sizes = []int{64, 512, 4 << 10, 64 << 10, 1 << 20}

// burst is BurstIdle's shape: count buffers of size bytes in flight at once
// (512 MiB). Tests shrink it.
var burst = struct{ size, count int }{64 << 10, 8192}

// burstGCs is how many GC cycles BurstIdle lets pass before it measures,
// after burstIdleTime with no Gets.
const burstGCs = 3

// burstIdleTime is how long BurstIdle idles after the burst: the time
// bytepool's retention rule takes to give back what no Get needs
// (grpctest.IdleTime). With -short, tests set it to 0.
var burstIdleTime = grpctest.IdleTime

func byteWorkloads() []byteWorkload {
	var ws []byteWorkload
	for _, n := range sizes {
		ws = append(ws, byteWorkload{name: "GetPut/size=" + sizeName(n),
			run: func(b *testing.B, na func() allocator) { getPut(b, na(), []int{n}) }})
	}
	for _, n := range sizes {
		ws = append(ws, byteWorkload{name: "GetPutParallel/size=" + sizeName(n),
			run: func(b *testing.B, na func() allocator) { getPutParallel(b, na(), n) }})
	}
	for _, d := range []struct {
		name  string
		sizes []int
	}{
		{"loguniform", logUniformSizes(64, 64<<10)},
		{"overboundary", overBoundarySizes(64 << 10)},
	} {
		ws = append(ws, byteWorkload{name: "Mixed/dist=" + d.name,
			run: func(b *testing.B, na func() allocator) { getPut(b, na(), d.sizes) }})
	}
	ws = append(ws, byteWorkload{name: "CrossGoroutine/size=4KiB",
		run:   func(b *testing.B, na func() allocator) { crossGoroutine(b, na(), 4<<10) },
		extra: []byteImpl{{"chan-only", func() allocator { return new(chanOnly) }}}})
	ws = append(ws, byteWorkload{name: "BurstIdle/size=" + sizeName(burst.size), once: true,
		run: func(b *testing.B, na func() allocator) { burstIdle(b, na, burst.size, burst.count) }})
	return ws
}

func init() {
	for _, w := range byteWorkloads() {
		for _, im := range slices.Concat(byteImpls, w.extra) {
			register(bench{workload: w.name, impl: im.name, once: w.once,
				run: func(b *testing.B) { w.run(b, im.new) }})
		}
	}
}

func sizeName(n int) string { return stats.FormatBytes(uint64(n)) }

// getPut is GetPut and Mixed: on one goroutine, Get the next size, touch
// the buffer, Put it back. len(sizes) must be a power of two.
func getPut(b *testing.B, a allocator, sizes []int) {
	l, release := local(a)
	defer release()
	mask := len(sizes) - 1
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p, h := l.get(sizes[i&mask])
		p[0] = 1
		l.put(p, h)
	}
}

// getPutParallel is getPut of one size on GOMAXPROCS goroutines at once.
func getPutParallel(b *testing.B, a allocator, n int) {
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		l, release := local(a)
		defer release()
		for pb.Next() {
			p, h := l.get(n)
			p[0] = 1
			l.put(p, h)
		}
	})
}

// crossQueue is how many buffers CrossGoroutine lets be in flight between
// its producer and its consumer.
const crossQueue = 64

// crossGoroutine is CrossGoroutine: this goroutine Gets buffers and sends
// them to a consumer goroutine, which Puts them; ns/op is per buffer.
func crossGoroutine(b *testing.B, a allocator, n int) {
	ch := make(chan buf, crossQueue)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l, release := local(a)
		defer release()
		for x := range ch {
			l.put(x.b, x.h)
		}
	}()
	l, release := local(a)
	defer release()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p, h := l.get(n)
		p[0] = 1
		ch <- buf{p, h}
	}
	close(ch)
	<-done
}

// burstIdle is BurstIdle: take count buffers of size bytes at once, return
// them all, idle for burstIdleTime, let burstGCs GC cycles pass, and report
// how much of the burst
// the heap still holds (retained-B, retained-%), measured from before the
// allocator was made, so a pool's up-front reservation counts. An allocator
// that reports memkit.Stats also reports the most its Stats.ReservedBytes
// reached (peak-reserved-B) and how many Gets it served from the heap
// instead of its own memory (heap-fallbacks: a Bounded pool past its
// budget), and allocs/new-buf: the heap allocations of the burst's Gets
// per buffer, each one new to the fresh allocator (make's is 1). ns/op is
// the time of one burst's Gets and Puts.
func burstIdle(b *testing.B, newAlloc func() allocator, size, count int) {
	b.ReportAllocs()
	hold := make([]buf, count)
	var (
		ms             runtime.MemStats
		st             memkit.Stats
		retained, peak uint64
		perBuf         float64 // allocations per buffer of the burst, all new
		fallbacks      uint64
		hasStats       bool
		readPeak       = func(a allocator) {
			if s, ok := a.(memkit.StatsSource); ok {
				s.ReadStats(&st)
				peak, hasStats = max(peak, st.ReservedBytes), true
				fallbacks = max(fallbacks, st.HeapFallbacks)
			}
		}
	)
	b.StopTimer()
	for range b.N {
		settle()
		runtime.ReadMemStats(&ms)
		base := ms.HeapInuse
		a := newAlloc()
		l, release := local(a)
		runtime.ReadMemStats(&ms)
		mallocs := ms.Mallocs
		b.StartTimer()
		for i := range hold {
			p, h := l.get(size)
			p[0] = 1
			hold[i] = buf{p, h}
		}
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		perBuf = float64(ms.Mallocs-mallocs) / float64(count)
		readPeak(a)
		b.StartTimer()
		for i := range hold {
			l.put(hold[i].b, hold[i].h)
			hold[i] = buf{}
		}
		release()
		b.StopTimer()
		time.Sleep(burstIdleTime)
		settle()
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > base {
			retained = max(retained, ms.HeapInuse-base)
		}
		readPeak(a)
		runtime.KeepAlive(a) // a long-lived pool: it must not be collected
	}
	b.StartTimer()
	b.ReportMetric(perBuf, "allocs/new-buf")
	b.ReportMetric(float64(retained), "retained-B")
	b.ReportMetric(100*float64(retained)/float64(size*count), "retained-%")
	if hasStats {
		b.ReportMetric(float64(peak), "peak-reserved-B")
		b.ReportMetric(float64(fallbacks), "heap-fallbacks")
	}
}

// settle runs burstGCs GC cycles back to back.
func settle() {
	for range burstGCs {
		runtime.GC()
	}
}

// tableLen is the length of Mixed's size tables, indexed by i&(tableLen-1).
const tableLen = 4096

// logUniformSizes returns tableLen sizes from lo to hi whose logarithm is
// uniform: as many requests between 64 and 128 bytes as between 32 and 64
// KiB. The seed is fixed, so every run and every impl sees the same sizes.
func logUniformSizes(lo, hi int) []int {
	r := rand.New(rand.NewPCG(1, 2))
	l, h := math.Log(float64(lo)), math.Log(float64(hi))
	s := make([]int, tableLen)
	for i := range s {
		s[i] = min(int(math.Exp(l+r.Float64()*(h-l))), hi)
	}
	return s
}

// overBoundarySizes returns tableLen sizes, each one byte over a class of
// memkit's default pool, for classes below limit: every request is rounded
// up by a whole class step, memkit's worst case.
func overBoundarySizes(limit int) []int {
	var over []int
	for _, c := range must(bytepool.New()).Classes() {
		if c < limit {
			over = append(over, c+1)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	s := make([]int, tableLen)
	for i := range s {
		s[i] = over[r.IntN(len(over))]
	}
	return s
}
