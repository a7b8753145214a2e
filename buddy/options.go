package buddy

import (
	"errors"

	"github.com/memkit/memkit/offheap"
)

// Option configures an [Allocator] built by [New].
type Option func(*config)

type config struct {
	offHeap bool
	alertAt int64
	alertFn func(used int64, above bool)
}

// WithOffHeap takes the region from [offheap.Alloc] instead of the Go heap:
// the GC then neither scans nor counts it, and [Allocator.Close] unmaps it.
// Never store Go pointers in it.
func WithOffHeap() Option { return func(c *config) { c.offHeap = true } }

// WithBudgetAlert calls fn when the bytes of the blocks handed out (at
// their rounded size: Stats.InUseBytes) rise to threshold or more (above
// true), and again when they fall back below it (above false), for load
// shedding. threshold must be between 1 and the region's size. The region's
// size is the allocator's budget: Alloc past it fails with [ErrNoSpace].
//
// The bytes change on every Alloc and Free, so they are counted there: a
// plain add and compare (an Allocator is used by one goroutine at a time),
// no atomic, no allocation. fn runs inside the Alloc or Free that crossed
// the threshold: it must be quick and must not call the allocator.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.alertAt, c.alertFn = threshold, fn }
}

// ErrNoSpace is returned by [Allocator.Alloc] when no free block is large
// enough, even after merging every free pair, or the request is larger than
// the region. The allocator is left unchanged but for Stats.Failures.
var ErrNoSpace = errors.New("memkit/buddy: no free block large enough")

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
