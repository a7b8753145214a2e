package slab

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
}

func defaultConfig() config {
	return config{idleSlabs: DefaultIdleSlabs}
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
