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

// WithBudget sets the byte budget of a [Bounded] pool (default 64 MiB): the
// size of the region it reserves. It is rounded down to whole 64 KiB slabs
// and must hold at least one. Each class in use takes at least one slab (a
// class above 64 KiB takes a run of up to four buffers' worth), so budget a
// slab per class you expect on top of the bytes you expect in flight.
func WithBudget(n int64) Option { return func(c *config) { c.budget = n } }

// WithZeroing makes Get return buffers whose every byte, up to the
// capacity, is zero. Without it (the default) a reused buffer holds whatever
// its previous user wrote.
func WithZeroing() Option { return func(c *config) { c.zeroed = true } }

// WithShards sets the number of shards the shared pool spreads its free
// lists over (default: 8 per GOMAXPROCS, rounded up to a power of two, at
// least 64). It is rounded up to a power of two.
func WithShards(n int) Option { return func(c *config) { c.shards = n } }
