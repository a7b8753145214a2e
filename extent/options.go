package extent

import (
	"github.com/memkit/memkit/internal/option"
	"math"

	"github.com/memkit/memkit/internal/budget"
)

// Option configures an [Allocator] built by [New] or [NewShared].
type Option func(*config)

// The defaults, all in one place.
const (
	DefaultBlockSize = 1 << 20
	DefaultGrowth    = 1.0
	// DefaultBorrowChunk is the size of the chunks Borrow carves from.
	DefaultBorrowChunk = 64 << 10
)

// maxBlock bounds one block, so that sizes stay in an int on 32-bit
// platforms.
const maxBlock = 1 << 30

type config struct {
	budget.Options // WithBudget, WithBudgetAlert
	blockSize      int
	growth         float64
	borrowChunk    int // 0: min(DefaultBorrowChunk, blockSize)
	offHeap        bool
}

// newConfig applies opts over the defaults and returns the configuration,
// or an error naming the first invalid option: the package's one table of
// option checks.
func newConfig(opts []Option) (config, error) {
	c := config{blockSize: DefaultBlockSize, growth: DefaultGrowth}
	nilErr := option.Apply(&c, opts)
	if c.borrowChunk == 0 {
		c.borrowChunk = min(DefaultBorrowChunk, c.blockSize)
	}
	budgetErr := c.Options.Check()
	limit := c.Limit()
	switch {
	case nilErr != nil:
		return c, errorf("%w", nilErr)
	case c.blockSize < 64 || c.blockSize > maxBlock:
		return c, errorf("BlockSize %d must be between 64 and 1GiB", c.blockSize)
	case math.IsNaN(c.growth) || c.growth < 1 || c.growth > 16:
		return c, errorf("Growth %v must be between 1 and 16", c.growth)
	case budgetErr != nil:
		return c, errorf("%w", budgetErr)
	case limit != 0 && limit < int64(c.blockSize):
		return c, errorf("WithBudget(%d) is less than BlockSize %d: raise the budget or lower WithBlockSize", limit, c.blockSize)
	case c.borrowChunk < 64 || c.borrowChunk > c.blockSize:
		return c, errorf("BorrowChunk %d must be between 64 and BlockSize %d", c.borrowChunk, c.blockSize)
	}
	return c, nil
}

// WithBlockSize sets the size of the blocks the allocator reserves and
// carves ranges from (default 1 MiB, between 64 B and 1 GiB). A request
// larger than a block gets a block of its own.
func WithBlockSize(n int) Option { return func(c *config) { c.blockSize = n } }

// WithGrowth makes each new block f times the size of the previous one, at
// least BlockSize and at most 1 GiB (default 1: every block is BlockSize).
// Growth above 1 reserves fewer, larger blocks for allocators whose use grows
// without a known bound.
func WithGrowth(f float64) Option { return func(c *config) { c.growth = f } }

// WithBudget is the allocator's byte budget: it bounds the bytes of all its
// blocks together (Stats.ReservedBytes less the heap fallbacks). n must be
// > 0, and at least BlockSize; leave the option out for no limit (the
// default). The budget is evaluated when a block is reserved, never on a
// Malloc or Free served from the free ranges. At the budget, a request that
// no free range fits is served by Malloc from the Go heap, in a block of its
// own that is counted in Stats.HeapFallbacks and outside the budget, and
// TryMalloc returns [ErrBudget], leaving the allocator unchanged but for
// Stats.Failures.
func WithBudget(n int64) Option { return func(c *config) { c.SetLimit(n) } }

// WithBudgetAlert calls fn when the bytes the allocator holds — all its
// blocks, heap fallbacks included: Stats.ReservedBytes — rise to threshold
// or more (above true), and again when they fall back below it (above
// false), for load shedding. threshold must be > 0 (and with [WithBudget],
// at most the budget) and fn non-nil; leave the option out for no alert.
// The bytes change only when a block is reserved or given back (a new
// block, a heap fallback, Trim, Close), so the alert is evaluated there,
// never on a Malloc or Free served from the free ranges, and costs those
// nothing. fn runs on the goroutine that crossed the threshold, inside the
// allocator's call: it must be quick, and must not call an [Allocator]
// (which is in the middle of the call). A [Shared] calls fn after it has
// released its lock, so fn may call the Shared (ReadStats, Malloc, Free);
// when two goroutines cross at once, fn may run on the second.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.SetAlert(threshold, fn) }
}

// WithBorrowChunk sets the size of the chunks [Allocator.Borrow] bumps
// through (default 64 KiB, or BlockSize if that is smaller; at most
// BlockSize).
func WithBorrowChunk(n int) Option { return func(c *config) { c.borrowChunk = n } }

// WithOffHeap takes blocks from [github.com/memkit/memkit/offheap] (mmap)
// instead of the Go heap: the GC neither scans nor counts them, and Trim and
// Close unmap them. Never store Go pointers in them.
func WithOffHeap() Option { return func(c *config) { c.offHeap = true } }
