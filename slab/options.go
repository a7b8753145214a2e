package slab

import (
	"errors"
	"fmt"
	"math"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/option"
	"github.com/memkit/memkit/offheap"
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
	budget.Options // WithBudget and WithBudgetAlert

	idleSlabs int
	free      func([]byte)
	shards    int
	src       mallocFunc // WithMalloc's or WithOffHeap's, or a Shared's wrapper for a shard
	freeSet   bool       // WithFree was given

	// Set by NewShared for its shards, which share them.
	bud *budget.Budget
	trk *checked.Tracker
}

// configure applies opts to the defaults, and refuses a nil Option.
func configure(opts []Option) (config, error) {
	cfg := config{idleSlabs: DefaultIdleSlabs}
	if err := option.Apply(&cfg, opts); err != nil {
		return cfg, fmt.Errorf("memkit/slab: %w", err)
	}
	return cfg, nil
}

// check returns what is wrong with the parameters of NewArena and the
// options, one case per mistake, or nil.
func (cfg *config) check(startChunkSize, slabSize int, growthFactor float64) error {
	switch {
	case startChunkSize <= 0:
		return fmt.Errorf("memkit/slab: startChunkSize %d must be positive", startChunkSize)
	case slabSize <= 0 || slabSize > MaxSlabSize:
		return fmt.Errorf("memkit/slab: slabSize %d must be between 1 and %d", slabSize, MaxSlabSize)
	case startChunkSize > slabSize:
		return fmt.Errorf("memkit/slab: startChunkSize %d > slabSize %d", startChunkSize, slabSize)
	case !(growthFactor > 1) || math.IsInf(growthFactor, 1):
		return fmt.Errorf("memkit/slab: growthFactor %v must be greater than 1", growthFactor)
	case cfg.idleSlabs < 0:
		return fmt.Errorf("memkit/slab: IdleSlabs %d must be >= 0", cfg.idleSlabs)
	}
	if err := cfg.Options.Check(); err != nil {
		return fmt.Errorf("memkit/slab: %w", err)
	}
	return nil
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
func WithFree(free func(slab []byte)) Option {
	return func(c *config) { c.free, c.freeSet = free, true }
}

// WithMalloc sets where slabs come from, in place of the malloc parameter
// of [NewArena] and [NewShared] (which it overrides): a function that
// returns slab bytes, or an error that [Arena.TryAlloc] returns as it is,
// so a memory source can say why it failed. Make it match [ErrNoSpace]
// (the source is out of memory) or [ErrBudget] (a limit refused it) with
// errors.Is, as every memkit allocator's errors do, so that callers can
// tell; [Arena.Alloc] returns nil either way. A slice shorter than size
// with a nil error counts as ErrNoSpace. malloc runs while the arena (a
// shard of a Shared) is locked, on the goroutine that needed the slab: it
// must not panic or call the arena. Pair it with [WithFree] for memory
// that must be given back.
func WithMalloc(malloc func(size int) ([]byte, error)) Option {
	return func(c *config) { c.src = malloc }
}

// WithOffHeap takes slabs from [github.com/memkit/memkit/offheap] (mmap,
// outside the Go heap) and gives each slab the arena releases back to the
// OS (munmap): the GC neither scans nor counts slab memory, so a large
// arena costs a GC cycle nothing. A failed mapping reaches [Arena.TryAlloc]
// as offheap's error, which matches [ErrNoSpace] (or [ErrBudget]) with
// errors.Is. Slab memory is zeroed when first mapped. Never store Go
// pointers in it, and never touch a buffer after its chunk is freed: once
// its slab is released, touching it faults. Use [WithIdleSlabs] to choose
// how many empty slabs each class keeps mapped. With [WithFree] too, the
// function given there replaces the munmap. On a platform without mmap
// (offheap.MmapAvailable false) the slabs are pointer-free Go heap memory.
func WithOffHeap() Option {
	return func(c *config) {
		c.src = offHeapAlloc
		if !c.freeSet {
			c.free = offHeapFree
		}
	}
}

// offHeapAlloc maps a slab of WithOffHeap; a failed mapping matches
// ErrNoSpace (offheap's own budget error already matches ErrBudget).
func offHeapAlloc(n int) ([]byte, error) {
	b, err := offheap.Alloc(n)
	if err != nil && !errors.Is(err, ErrBudget) {
		err = fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return b, err
}

// offHeapFree gives a slab of WithOffHeap back to the OS.
func offHeapFree(b []byte) {
	if err := offheap.Free(b); err != nil {
		panic("memkit/slab: " + err.Error())
	}
}

// WithBudget limits the memory the arena holds, its slabs, to n bytes;
// n must be > 0 (leave the option out for no limit): NewArena and
// NewShared return an error otherwise. When a request needs a new slab and
// the slab would take the arena past n, [Arena.Alloc] returns nil and
// [Arena.TryAlloc] returns [ErrBudget], and the arena is unchanged except
// for Stats.Failures. The budget counts whole slabs, so it is reached in
// steps of the slab size; slabs that are released give their bytes back.
// The slabs of a [Shared] count against one budget, shared by its shards:
// when the calling goroutine's shard needs a slab the budget refuses,
// Alloc and TryAlloc take a free chunk of another shard before they give
// up; chunks idle in another class's set (see [Shared]) come back to their
// slabs, and so count as free, only after GCs.
func WithBudget(n int64) Option { return func(c *config) { c.SetLimit(n) } }

// WithBudgetAlert calls fn with the bytes the arena holds (its slabs, as
// Stats.ReservedBytes counts them) when they rise to threshold or more
// (above true) and when they fall back below it (above false): a signal
// for load shedding, before [WithBudget]'s limit refuses memory. It is
// evaluated only when the arena takes a slab or releases one, never on
// Alloc or DecRef of a chunk in a slab it holds, so it costs the hot path
// nothing. fn runs on the goroutine that took or released the slab (for a
// [Shared], possibly the runtime's cleanup goroutine, after a GC), and
// must be quick. In an [Arena] it runs inside that Alloc or DecRef: it may
// read the arena's ReadStats, and must not call its other methods. In a
// [Shared] it runs once the method that crossed the threshold has unlocked
// its shard, before that method returns, so it may call any method of the
// Shared, ReadStats included; crossings of several goroutines are
// delivered in order, one call at a time. threshold must be > 0, fn must not be
// nil, and with a budget the threshold must not be above it: NewArena and
// NewShared return an error otherwise.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.SetAlert(threshold, fn) }
}

// source returns where the arena's slabs come from: malloc, the
// positional parameter of NewArena and NewShared, or the Go heap.
func (cfg *config) source(malloc func(int) []byte) mallocFunc {
	if cfg.src != nil {
		return cfg.src
	}
	if malloc != nil {
		return legacyMalloc(malloc)
	}
	return heapSlab
}
