package kv

import (
	"fmt"
	"math/bits"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/option"
)

// Option configures a [Map] built by [New].
type Option func(*config)

// MaxShards is the largest number of shards [WithShards] accepts.
const MaxShards = 256

type config struct {
	budget.Options // WithBudget

	evict   bool
	huge    bool
	shards  int
	segSize int // derived: the segment size
}

// WithBudget limits the memory the Map maps — its segments of entries and
// its index tables — to n bytes; n must be > 0 (leave the option out for
// no limit). When a Set needs more, the Map first compacts (reclaims the
// space of deleted and overwritten entries); if that is not enough, Set
// returns [ErrBudget] and changes nothing, unless [WithEviction] makes the
// Map a cache. The budget counts whole segments and index tables, so it is
// reached in those steps: segments are 256 KiB, smaller (down to 16 KiB)
// under a budget too small for 16 of them per shard, and then, without
// [WithShards], the Map takes fewer shards.
func WithBudget(n int64) Option { return func(c *config) { c.SetLimit(n) } }

// WithEviction makes a full Map a cache: when a Set needs memory that
// [WithBudget] refuses and compaction cannot free, the shard of the key
// drops its oldest segment of entries (first in, first out, by the time
// each segment was filled: an entry overwritten since lives in a newer
// one) and Set succeeds. Evicted entries are counted by [Map.Evictions]
// and in Stats.Frees. Without a budget it changes nothing.
func WithEviction() Option { return func(c *config) { c.evict = true } }

// WithShards sets the number of shards, each with its own lock, index and
// segments (default 256, fewer with a small budget); it is rounded up to a
// power of two, at most [MaxShards]. More shards contend less; each holds
// at least one segment once written to.
func WithShards(n int) Option { return func(c *config) { c.shards = n } }

// WithHugePages advises the memory of a large Map's entries (past its first
// 64 MiB) for transparent huge pages (MADV_HUGEPAGE; Linux, when THP is
// "madvise" or "always"). A Get at a random place among gigabytes then
// costs no TLB miss: a serial random Get of a 3M-entry, 1.8 GB Map took
// 720-727 ns with it against 813-853 without, on the 2-core virtual
// machine of docs/performance.md. The price is each huge page's first
// write, which the kernel serves by zeroing 2 MiB: 4.3-5.6 ms there, during
// which the whole process stalled (a load generator's senders were all late
// at once two to three times as often, and p99.9 latency rose by a third),
// and filling the Map took four times as long (writing the region ahead,
// MADV_POPULATE_WRITE and MADV_COLLAPSE all stalled it alike); and
// resident memory, since a touched huge page is resident whole. The Map
// keeps one region (2 MiB)
// written ahead of need by a goroutine of its own, so that a Set does not
// pay the fault inside its shard's lock. Measure with your workload before
// you turn it on: on a machine whose huge-page faults are cheap it is a
// gain for Get-heavy Maps much larger than the TLB's reach.
func WithHugePages() Option { return func(c *config) { c.huge = true } }

// configure applies opts to the defaults and checks them.
func configure(opts []Option) (config, error) {
	var cfg config
	if err := option.Apply(&cfg, opts); err != nil {
		return cfg, fmt.Errorf("memkit/kv: %w", err)
	}
	if err := cfg.Options.Check(); err != nil {
		return cfg, fmt.Errorf("memkit/kv: %w", err)
	}
	n := cfg.shards
	cfg.segSize = segSize
	switch {
	case n < 0 || n > MaxShards:
		return cfg, fmt.Errorf("memkit/kv: WithShards(%d): the number of shards must be between 1 and %d", n, MaxShards)
	case n == 0:
		n = MaxShards
	default:
		n = 1 << bits.Len(uint(n-1))
	}
	if lim := cfg.Limit(); lim > 0 {
		// Each shard gets at least 16 segments of the budget, so that an
		// eviction drops at most 1/16 of a shard: smaller segments first,
		// then, without WithShards, fewer shards.
		for cfg.segSize > minSegSize && lim/int64(n) < 16*int64(cfg.segSize) {
			cfg.segSize /= 2
		}
		for cfg.shards == 0 && n > 1 && lim/int64(n) < 16*int64(cfg.segSize) {
			n /= 2
		}
	}
	cfg.shards = n
	return cfg, nil
}
