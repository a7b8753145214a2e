package extent

import (
	"errors"
	"fmt"
	"math"
)

// Option configures an [Allocator] built by [New] or [NewShared].
type Option func(*config)

// The defaults, all in one place.
const (
	DefaultBlockSize = 1 << 20
	DefaultGrowth    = 1.0
	DefaultMaxTotal  = 0 // no limit
	// DefaultBorrowChunk is the size of the chunks Borrow carves from.
	DefaultBorrowChunk = 64 << 10
)

// maxBlock bounds one block, so that sizes stay in an int on 32-bit
// platforms.
const maxBlock = 1 << 30

type config struct {
	blockSize   int
	growth      float64
	maxTotal    int64
	borrowChunk int
	offHeap     bool
	alertAt     int64
	alertFn     func(used int64, above bool)
}

func defaultConfig() config {
	return config{
		blockSize: DefaultBlockSize,
		growth:    DefaultGrowth,
		maxTotal:  DefaultMaxTotal,
	}
}

func (c *config) check() error {
	if c.borrowChunk == 0 {
		c.borrowChunk = min(DefaultBorrowChunk, c.blockSize)
	}
	switch {
	case c.blockSize < 64 || c.blockSize > maxBlock:
		return errorf("BlockSize %d must be between 64 and 1GiB", c.blockSize)
	case math.IsNaN(c.growth) || c.growth < 1 || c.growth > 16:
		return errorf("Growth %v must be between 1 and 16", c.growth)
	case c.maxTotal < 0:
		return errorf("MaxTotal %d must be >= 0 (0: no limit)", c.maxTotal)
	case c.maxTotal != 0 && c.maxTotal < int64(c.blockSize):
		return errorf("MaxTotal %d < BlockSize %d", c.maxTotal, c.blockSize)
	case c.alertFn != nil && c.alertAt <= 0:
		return errorf("BudgetAlert threshold %d must be > 0", c.alertAt)
	case c.borrowChunk < 64 || c.borrowChunk > c.blockSize:
		return errorf("BorrowChunk %d must be between 64 and BlockSize %d", c.borrowChunk, c.blockSize)
	}
	return nil
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

// WithMaxTotal is the allocator's byte budget: it bounds the bytes of all
// blocks together (default 0: no limit). At the budget, a request that no
// free range fits is served by Malloc from the Go heap, in a block of its
// own that is counted in Stats.HeapFallbacks and outside the budget, and
// TryMalloc returns [ErrNoSpace], leaving the allocator unchanged but for
// Stats.Failures.
func WithMaxTotal(n int64) Option { return func(c *config) { c.maxTotal = n } }

// WithBudgetAlert calls fn when the bytes the allocator holds — all its
// blocks, heap fallbacks included: Stats.ReservedBytes — rise to threshold
// or more (above true), and again when they fall back below it (above
// false), for load shedding. threshold must be > 0. The bytes change only
// when a block is reserved or given back (a new block, a heap fallback,
// Trim, Close), so fn runs on that slow path, never on a Malloc or Free
// served from the free ranges, and costs those nothing. fn runs on the
// goroutine that crossed the threshold, inside the allocator's call (under
// the lock of a [Shared]): it must be quick and must not call the
// allocator. A nil fn means no alert.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.alertAt, c.alertFn = threshold, fn }
}

// WithBorrowChunk sets the size of the chunks [Allocator.Borrow] bumps
// through (default 64 KiB, or BlockSize if that is smaller; at most
// BlockSize).
func WithBorrowChunk(n int) Option { return func(c *config) { c.borrowChunk = n } }

// WithOffHeap takes blocks from [github.com/memkit/memkit/offheap] (mmap)
// instead of the Go heap: the GC neither scans nor counts them, and Trim and
// Close unmap them. Never store Go pointers in them.
func WithOffHeap() Option { return func(c *config) { c.offHeap = true } }

// ErrNoSpace is returned by [Allocator.TryMalloc] when a request does not fit
// in the free ranges and a new block would pass MaxTotal. The allocator is
// left unchanged but for Stats.Failures.
var ErrNoSpace = errors.New("memkit/extent: no space within MaxTotal")

// errTooLarge is what TryMalloc wraps when the system cannot provide a
// request at all: it is ErrNoSpace too, the budget being the machine's.
var errTooLarge = fmt.Errorf("more than the system can provide: %w", ErrNoSpace)
