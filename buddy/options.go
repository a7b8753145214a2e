package buddy

import (
	"errors"
	"fmt"
	"github.com/memkit/memkit/internal/option"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/sysmem"
	"github.com/memkit/memkit/offheap"
)

// Option configures an [Allocator] built by [New].
type Option func(*config)

type config struct {
	budget.Options // WithBudgetAlert; there is no WithBudget: the region is the budget
	offHeap        bool
}

// newConfig checks New's arguments and applies opts: the package's one
// table of checks, each naming what is wrong and what to do.
func newConfig(size, minBlock int, opts []Option) (config, error) {
	var c config
	nilErr := option.Apply(&c, opts)
	budgetErr := c.Options.Check()
	threshold, _ := c.Alert()
	// The bookkeeping, and the region unless it is off the heap, come from
	// make, which ends the process when the system refuses: ask first.
	need := uint64(max(size/max(minBlock, 1), 0)) * bookkeeping
	if !c.offHeap {
		need += uint64(max(size, 0))
	}
	switch {
	case nilErr != nil:
		return c, fmt.Errorf("memkit/buddy: %w", nilErr)
	case minBlock < 8 || minBlock&(minBlock-1) != 0:
		return c, fmt.Errorf("memkit/buddy: minBlock %d must be a power of two >= 8", minBlock)
	case size < minBlock || size&(size-1) != 0:
		return c, fmt.Errorf("memkit/buddy: size %d must be a power of two >= minBlock %d", size, minBlock)
	case size/minBlock > 1<<30:
		return c, fmt.Errorf("memkit/buddy: size %d / minBlock %d is more than 2^30 blocks", size, minBlock)
	case budgetErr != nil:
		return c, fmt.Errorf("memkit/buddy: %w", budgetErr)
	case c.HasAlert() && threshold > int64(size):
		return c, fmt.Errorf("memkit/buddy: WithBudgetAlert(%d, fn): the threshold is above the region's size %d, so the alert could never fire", threshold, size)
	case !sysmem.Available(need):
		return c, fmt.Errorf("memkit/buddy: size %d with minBlock %d needs %d bytes of the Go heap, more than the system can provide: use a smaller size or a larger minBlock", size, minBlock, need)
	}
	return c, nil
}

// WithOffHeap takes the region from [offheap.Alloc] instead of the Go heap:
// the GC then neither scans nor counts it, and [Allocator.Close] unmaps it.
// Never store Go pointers in it.
func WithOffHeap() Option { return func(c *config) { c.offHeap = true } }

// WithBudgetAlert calls fn when the bytes of the blocks handed out (at
// their rounded size: Stats.InUseBytes) rise to threshold or more (above
// true), and again when they fall back below it (above false), for load
// shedding. threshold must be > 0 and at most the region's size, and fn
// non-nil; leave the option out for no alert. There is no WithBudget: the
// region's size is the allocator's budget, and Alloc past it fails with
// [ErrNoSpace].
//
// The bytes change on every Alloc and Free, so the alert is evaluated
// there: a plain add and compare (an Allocator is used by one goroutine at
// a time), no allocation. fn runs inside the Alloc or Free that crossed
// the threshold: it must be quick and must not call the allocator.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.SetAlert(threshold, fn) }
}

// ErrNoSpace is returned by [Allocator.Alloc] when no free block is large
// enough, even after merging every free pair, or the request is larger than
// the region. The allocator is left unchanged but for Stats.Failures.
// errors.Is matches it with the ErrNoSpace of every memkit package (the
// memory source has nothing for the call), not with their ErrBudget.
var ErrNoSpace error = budget.NewErrNoSpace("buddy", "no free block large enough")

// ErrClosed is returned by [Allocator.Alloc] after [Allocator.Close].
var ErrClosed = errors.New("memkit/buddy: allocator closed")

func regionAlloc(size int, offHeap bool) ([]byte, error) {
	if offHeap {
		b, err := offheap.Alloc(size)
		if err != nil {
			return nil, err
		}
		return b[:size:size], nil
	}
	return make([]byte, size), nil
}
