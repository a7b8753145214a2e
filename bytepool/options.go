package bytepool

import (
	"fmt"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/sizeclass"
	"github.com/memkit/memkit/internal/sysmem"
)

// Policy selects how a [Pool] obtains and keeps memory.
type Policy int

const (
	// Elastic, the default, allocates each buffer from the Go heap on first
	// use and keeps returned buffers for reuse, per P, in a sync.Pool per
	// class, with a reserve behind it that no GC cycle empties. It keeps
	// what the recent peak of demand needed and gives the rest back to the
	// GC once a whole [RetentionPeriod] passed without a Get needing it:
	// memory kept after a burst goes back within two periods (see
	// [RetentionPeriod]).
	Elastic Policy = iota
	// Bounded reserves one region of Budget bytes up front and carves every
	// buffer out of it, so the pool holds no per-buffer GC objects and never
	// exceeds its budget. When the region is used up, Get falls back to the
	// heap (counted in Stats.HeapFallbacks) and TryGet reports false. A Put
	// of anything but the start of a region buffer is dropped and counted.
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
	DefaultLockedFrom  = 256 << 10
)

type config struct {
	budget.Options // WithBudget, WithBudgetAlert

	minSize, maxSize, perDoubling int
	policy                        Policy
	zeroed                        bool
	lockedFrom                    int // Elastic: the smallest class kept only in its reserve
	sampleBits                    int // Elastic: count 1 in 2^sampleBits buffers (0: every one)
}

func defaultConfig() config {
	return config{
		minSize:     DefaultMinSize,
		maxSize:     DefaultMaxSize,
		perDoubling: DefaultPerDoubling,
		policy:      Elastic,
		lockedFrom:  DefaultLockedFrom,
		sampleBits:  sampleBits,
	}
}

// configure applies opts to the defaults and checks them, naming the first
// bad option, and returns the size classes they ask for.
func configure(opts []Option) (config, *sizeclass.Table, error) {
	cfg := defaultConfig()
	for i, o := range opts {
		if o == nil {
			return cfg, nil, fmt.Errorf("%soption %d is nil", prefix, i)
		}
		o(&cfg)
	}
	if err := cfg.check(); err != nil {
		return cfg, nil, err
	}
	t, err := sizeclass.New(cfg.minSize, cfg.maxSize, cfg.perDoubling, "MinSize", "MaxSize", "ClassesPerDoubling")
	if err != nil {
		return cfg, nil, fmt.Errorf("%s%w", prefix, err)
	}
	return cfg, t, nil
}

// check returns what is wrong with the options that do not depend on the
// size classes (sizeclass.New checks those), one rule per case.
func (c *config) check() error {
	switch {
	case uint64(max(c.maxSize, 0)) > sysmem.MaxAlloc:
		return fmt.Errorf("%sMaxSize %d is more than any one allocation can be (at most %d); lower it", prefix, c.maxSize, sysmem.MaxAlloc)
	case c.policy != Elastic && c.policy != Bounded:
		return fmt.Errorf("%sPolicy %d is neither Elastic nor Bounded", prefix, int(c.policy))
	case c.lockedFrom <= 0:
		return fmt.Errorf("%sLockedFrom %d is not > 0; leave the option out for the default (%d), or pass more than MaxSize for no locked class", prefix, c.lockedFrom, DefaultLockedFrom)
	}
	if err := c.Options.Check(); err != nil {
		return fmt.Errorf("%s%w", prefix, err)
	}
	return nil
}

// regionSize is the bytes a Bounded pool reserves: the WithBudget limit,
// or DefaultBudget without one.
func (c *config) regionSize() int64 {
	if n := c.Limit(); n > 0 {
		return n
	}
	return DefaultBudget
}

// WithMinSize sets the smallest class (default 64). Smaller requests are
// served from it. It must be a power of two of at least 8.
func WithMinSize(n int) Option { return func(c *config) { c.minSize = n } }

// WithMaxSize sets the largest class (default 1 MiB). Larger requests are
// served by make and counted in Stats.HeapFallbacks. It must be a power of
// two, and at most the largest allocation the Go runtime can serve (2^47-1
// bytes on 64-bit platforms, 2^31-1 on 32-bit ones): New returns an error
// past it. A class the machine cannot serve when Get needs a new buffer of
// it panics with a memkit message (TryGet reports false), as a request
// above the largest class does.
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
// least one, and may be at most 128 TiB and, on Linux, at most the
// machine's RAM and swap (New returns an error past either, rather than let
// the reservation end the process). Each class in use takes at least one
// slab (a class above 64 KiB takes a run of up to four buffers' worth), so
// budget a slab per class you expect on top of the bytes you expect in
// flight. At the budget Get falls back to the heap (Stats.HeapFallbacks)
// and TryGet reports false. The budget is exact: the region is all the
// pool's classes ever hold.
//
// For an [Elastic] pool (default: none) it bounds the bytes of the buffers
// the pool has made and the GC has not yet collected, in use or idle. At
// the budget a Get that needs a new buffer still gets
// one, made outside the budget and counted in Stats.HeapFallbacks, and
// TryGet reports false instead, changing nothing but Stats.Failures. A
// buffer is charged when the pool makes it and released when the GC
// collects it (the pool gives idle buffers back as the retention rule
// says, and a finalizer sees each one go), so the budget is exact as of the
// last GC. A
// buffer never put back stays charged until the GC collects it. The budget
// is charged and released only on those slow paths, never by a Get or Put
// of an idle buffer.
//
// n must be > 0, for either policy: leave the option out for no limit (or,
// for a Bounded pool, for DefaultBudget). New returns an error otherwise.
func WithBudget(n int64) Option { return func(c *config) { c.SetLimit(n) } }

// WithBudgetAlert calls fn when the bytes charged to the pool's budget rise
// to threshold or more (above true) and when they fall back below it
// (above false), once per crossing, for load shedding. It needs no
// [WithBudget] limit. threshold must be > 0, fn must not be nil, and with
// WithBudget the threshold must not be above the budget: New returns an
// error otherwise.
//
// What is charged: for an [Elastic] pool, the buffers it has made and not
// given back to the GC (see [WithBudget]); for a [Bounded] pool, the slabs
// of its region that classes have taken (a region is never given back, so
// this only grows) plus heap fallbacks while they are live. Buffers above
// the largest class are charged while they are live in both. fn runs on
// the goroutine that crossed the threshold, on a slow path (a buffer made,
// a slab taken, or, on the runtime's finalizer goroutine, a buffer the GC
// collected), never inside Get or Put's fast path,
// and never with a lock of the pool held; it must be quick and must not
// block.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.SetAlert(threshold, fn) }
}

// WithExactStats makes an [Elastic] pool count every Get and Put exactly,
// at the cost of one atomic add per call on a counter of the class shared
// by every goroutine, instead of estimating them from a 1-in-64 sample of
// the buffers (see [Pool.ReadStats]). Use it for tests, and for pools whose
// call rate is low enough that the shared counter does not show. A
// [Bounded] pool and a [Cache] always count exactly, at no such cost (a
// Bounded pool's Get counts itself in its buffer's slot, which ReadStats
// reads).
func WithExactStats() Option { return func(c *config) { c.sampleBits = 0 } }

// WithLockedFrom makes every class of an [Elastic] pool of n bytes or more
// (default [DefaultLockedFrom], 256 KiB) keep its idle buffers only in its
// reserve, a slice under a mutex, never in a sync.Pool. n must be > 0 (New
// returns an error otherwise); n above the largest class leaves every class
// on sync.Pools. A [Bounded] pool has no sync.Pool and ignores it.
//
// What it costs and saves: a Get and a Put of such a class each take the
// reserve's mutex, one uncontended lock and unlock each (a warm Get+Put
// pair took 36 ns against a sync.Pool class's 12.5 ns, on a 2-core AMD
// EPYC where an uncontended atomic.AddUint64 takes 5 ns:
// BenchmarkPool_GetPut, impl=memkit-locked), and goroutines on different
// Ps that Get and Put the class at once wait for each other. In exchange
// the class allocates nothing per GC cycle: each cycle empties every
// sync.Pool's per-P storage, so that the first Get or Put of a sync.Pool
// class after a cycle allocates the pool's per-P array and its Puts
// allocate new chain blocks, a few allocations per class per cycle. A
// program moving buffers of tens of KiB runs a GC every few of them, so
// those add up, while a buffer that size takes microseconds to fill, next
// to which the mutex is noise (grpcpool locks its classes from 16 KiB up).
// Idle buffers of a locked class follow the same retention rule as the
// others (see [RetentionPeriod]).
func WithLockedFrom(n int) Option { return func(c *config) { c.lockedFrom = n } }

// WithZeroing makes Get return buffers whose every byte, up to the
// capacity, is zero. Without it (the default) a reused buffer holds whatever
// its previous user wrote.
func WithZeroing() Option { return func(c *config) { c.zeroed = true } }
