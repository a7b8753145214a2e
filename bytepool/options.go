package bytepool

import (
	"fmt"
	"runtime"
)

// Policy selects how a [Pool] obtains and keeps memory.
type Policy int

const (
	// Elastic, the default, allocates each buffer from the Go heap on first
	// use and keeps returned buffers for reuse. Idle buffers are given back
	// to the GC over time: memory kept after a burst decays within two GC
	// cycles instead of staying pinned.
	Elastic Policy = iota
	// Bounded reserves one region of Budget bytes up front and carves every
	// buffer out of it, so the pool holds no per-buffer GC objects and never
	// exceeds its budget. When the region is used up, Get falls back to the
	// heap (counted in Stats.HeapFallbacks) and TryGet reports false. A double
	// Put of a region buffer panics.
	Bounded
)

func (p Policy) String() string {
	switch p {
	case Elastic:
		return "Elastic"
	case Bounded:
		return "Bounded"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// Option configures a [Pool] built by [New].
type Option func(*config)

// The defaults, all in one place.
const (
	DefaultMinSize     = 64
	DefaultMaxSize     = 1 << 20
	DefaultPerDoubling = 4
	DefaultBudget      = 64 << 20
)

type config struct {
	minSize, maxSize, perDoubling int
	policy                        Policy
	budget                        int64
	budgetSet                     bool
	alertAt                       int64
	alertFn                       func(used int64, above bool)
	zeroed                        bool
	shards                        int
}

func defaultConfig() config {
	return config{
		minSize:     DefaultMinSize,
		maxSize:     DefaultMaxSize,
		perDoubling: DefaultPerDoubling,
		policy:      Elastic,
		budget:      DefaultBudget,
		shards:      defaultShards(),
	}
}

// defaultShards is eight shards per P, at least 64, rounded up to a power of
// two, so that goroutines running at once rarely hash to the same one.
func defaultShards() int {
	n := 8 * runtime.GOMAXPROCS(0)
	s := 64
	for s < n {
		s *= 2
	}
	return s
}

// WithMinSize sets the smallest class (default 64). Smaller requests are
// served from it. It must be a power of two of at least 8.
func WithMinSize(n int) Option { return func(c *config) { c.minSize = n } }

// WithMaxSize sets the largest class (default 1 MiB). Larger requests are
// served by make and counted in Stats.HeapFallbacks. It must be a power of two.
func WithMaxSize(n int) Option { return func(c *config) { c.maxSize = n } }

// WithClassesPerDoubling sets how many classes divide each doubling of size
// (default 4: 64, 80, 96, 112, 128, 160, ...). 1 gives powers of two; 4
// bounds the space lost to rounding a request up near 20%; 8 near 11%. It
// must be a power of two, and MinSize/n must be at least 8.
func WithClassesPerDoubling(n int) Option { return func(c *config) { c.perDoubling = n } }

// WithPolicy selects the memory policy (default [Elastic]).
func WithPolicy(p Policy) Option { return func(c *config) { c.policy = p } }

// WithBudget sets the pool's byte budget.
//
// For a [Bounded] pool (default 64 MiB) it is the size of the region the
// pool reserves at New: rounded down to whole 64 KiB slabs, it must hold at
// least one. Each class in use takes at least one slab (a class above
// 64 KiB takes a run of up to four buffers' worth), so budget a slab per
// class you expect on top of the bytes you expect in flight. At the budget
// Get falls back to the heap (Stats.HeapFallbacks) and TryGet reports
// false.
//
// For an [Elastic] pool (default: none) it bounds the bytes of the buffers
// the pool has made and not yet given back to the GC, in use or idle; n
// must be positive. At the budget a Get that needs a new buffer still gets
// one, made outside the budget and counted in Stats.HeapFallbacks, and
// TryGet reports false instead, changing nothing but Stats.Failures. Idle
// buffers beyond the budget are dropped to the GC, counted in
// Stats.Releases, when they move from a shard or a [Cache] to the pool's
// depot (a batch at a time, and at every GC cycle), so the budget is soft
// by at most the idle buffers the shards and Caches hold. A buffer never
// put back stays charged. The budget is charged and released only on those
// slow paths, never by a Get or Put served from a shard or a Cache.
func WithBudget(n int64) Option { return func(c *config) { c.budget, c.budgetSet = n, true } }

// WithBudgetAlert calls fn when the bytes charged to the pool's budget rise
// to threshold or more (above true) and when they fall back below it
// (above false), once per crossing, for load shedding. It needs no
// [WithBudget] limit. threshold must be positive.
//
// What is charged: for an [Elastic] pool, the buffers it has made and not
// given back to the GC (see [WithBudget]); for a [Bounded] pool, the slabs
// of its region that classes have taken (a region is never given back, so
// this only grows) plus heap fallbacks while they are live. Buffers above
// the largest class are charged while they are live in both. fn runs on
// the goroutine that crossed the threshold, on a slow path (a buffer made,
// a slab taken, idle buffers dropped), never inside Get or Put's fast path,
// and never with a lock of the pool held; it must be quick and must not
// block.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.alertAt, c.alertFn = threshold, fn }
}

// WithZeroing makes Get return buffers whose every byte, up to the
// capacity, is zero. Without it (the default) a reused buffer holds whatever
// its previous user wrote.
func WithZeroing() Option { return func(c *config) { c.zeroed = true } }

// WithShards sets the number of shards the shared pool spreads its free
// lists over (default: 8 per GOMAXPROCS, rounded up to a power of two, at
// least 64). It is rounded up to a power of two.
func WithShards(n int) Option { return func(c *config) { c.shards = n } }
