package buddy

import (
	"errors"

	"github.com/memkit/memkit/offheap"
)

// Option configures an [Allocator] built by [New].
type Option func(*config)

type config struct {
	offHeap bool
}

// WithOffHeap takes the region from [offheap.Alloc] instead of the Go heap:
// the GC then neither scans nor counts it, and [Allocator.Close] unmaps it.
// Never store Go pointers in it.
func WithOffHeap() Option { return func(c *config) { c.offHeap = true } }

// ErrNoSpace is returned by [Allocator.Alloc] when no free block is large
// enough, even after merging every free pair, or the request is larger than
// the region. The allocator is left unchanged but for Stats.Failures.
var ErrNoSpace = errors.New("buddy: no free block large enough")

// ErrClosed is returned by [Allocator.Alloc] after [Allocator.Close].
var ErrClosed = errors.New("buddy: allocator closed")

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
