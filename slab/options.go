package slab

import (
	"fmt"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
)

// Option configures an [Arena] built by [NewArena] or a [Shared] built by
// [NewShared].
type Option func(*config)

// DefaultIdleSlabs is how many entirely free slabs each slab class keeps
// for reuse before it releases the next one that becomes free.
const DefaultIdleSlabs = 1

// MaxSlabSize is the largest slab size [NewArena] accepts (1 GiB), so that
// every offset and length inside a slab fits in 32 bits, on every platform.
const MaxSlabSize = 1 << 30

type config struct {
	idleSlabs int
	free      func([]byte)
	shards    int
	budget    int64 // 0: none
	alertAt   int64
	alertFn   func(used int64, above bool)

	// Set by NewShared for its shards, which share them.
	bud *budget.Budget
	trk *checked.Tracker
}

// configure applies opts to the defaults, and refuses a nil Option.
func configure(opts []Option) (config, error) {
	cfg := config{idleSlabs: DefaultIdleSlabs}
	for k, o := range opts {
		if o == nil {
			return cfg, fmt.Errorf("memkit/slab: option %d of %d is nil", k+1, len(opts))
		}
		o(&cfg)
	}
	return cfg, nil
}

// MaxShards is the largest number of shards [NewShared] accepts.
const MaxShards = 256

// WithShards sets the number of shards of an arena built by [NewShared]
// (default: 8 per GOMAXPROCS, at least 16, at most [MaxShards]); it is
// rounded up to a power of two. [NewArena] ignores it. Each shard is an
// [Arena] of its own, with its own slabs, taken only once a goroutine
// allocates from it: more shards contend less, but when many goroutines
// use them all they keep more partly used slabs.
func WithShards(n int) Option { return func(c *config) { c.shards = n } }

// WithIdleSlabs sets the hysteresis of slab release: each slab class keeps
// up to n entirely free slabs for reuse, and releases a slab that becomes
// entirely free only when it already holds n (default [DefaultIdleSlabs]).
// With n = 0 every slab is released as soon as its last chunk is freed; a
// larger n avoids giving memory back and asking for it again when the
// number of live chunks oscillates around a slab boundary. n must be >= 0.
func WithIdleSlabs(n int) Option { return func(c *config) { c.idleSlabs = n } }

// WithFree sets the function a released slab is handed to: for memory from
// an off-heap malloc, the function that gives it back to the OS (for
// example an munmap). Without it (the default) a released slab is dropped
// and left to the GC, which is right for memory from the Go heap.
func WithFree(free func(slab []byte)) Option { return func(c *config) { c.free = free } }

// WithBudget limits the memory the arena holds, its slabs, to n bytes (0,
// the default, for no limit; NewArena and NewShared return an error for a
// negative n). When a request needs a new slab and the slab would take the
// arena past n, [Arena.Alloc] returns nil and [Arena.TryAlloc] returns
// [ErrBudget], and the arena is unchanged except for Stats.Failures. The
// budget counts whole slabs, so it is reached in steps of the slab size;
// slabs that are released give their bytes back. The slabs of a [Shared]
// count against one budget, shared by its shards: when the calling
// goroutine's shard needs a slab the budget refuses, Alloc and TryAlloc
// take a free chunk of another shard before they give up.
func WithBudget(n int64) Option { return func(c *config) { c.budget = n } }

// WithBudgetAlert calls fn with the bytes the arena holds (its slabs, as
// Stats.ReservedBytes counts them) when they rise to threshold or more
// (above true) and when they fall back below it (above false): a signal
// for load shedding, before [WithBudget]'s limit refuses memory. It is
// evaluated only when the arena takes a slab or releases one, never on
// Alloc or DecRef of a chunk in a slab it holds, so it costs the hot path
// nothing. fn runs on the goroutine that took or released the slab, while
// the arena (or the shard of a [Shared]) is locked: it must be quick and
// must not call back into the arena. A threshold <= 0 or a nil fn means no
// alert.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.alertAt, c.alertFn = threshold, fn }
}

// newBudget returns the budget cfg asks for, or nil for none.
func (cfg *config) newBudget() *budget.Budget {
	if cfg.budget == 0 && (cfg.alertAt <= 0 || cfg.alertFn == nil) {
		return nil
	}
	if cfg.alertAt <= 0 {
		return budget.New(cfg.budget, 0, nil)
	}
	return budget.New(cfg.budget, cfg.alertAt, cfg.alertFn)
}
