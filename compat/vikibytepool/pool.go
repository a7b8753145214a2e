package bytepool

import (
	"fmt"
	"sync"

	"github.com/memkit/memkit/buffer"
)

// Option configures a pool built by New or NewJson: WithOverflow, or any
// option of [buffer.NewFixedPool] (WithBudget, WithBytePool, ...): it is
// [buffer.FixedOption].
type Option = buffer.FixedOption

// Overflow is what an item does when a write would pass its capacity.
type Overflow = buffer.Overflow

const (
	// Expand (the default) moves the item to larger storage; the write
	// succeeds and the pool counts an expansion.
	Expand = buffer.Expand
	// Strict refuses the write, writing nothing: Write returns
	// io.ErrShortWrite, WriteString 0, WriteByte io.ErrShortWrite, and
	// ReadFrom keeps what fit and returns io.ErrShortWrite. Viki's item
	// kept what fit and reported success.
	Strict = buffer.Strict
)

// WithOverflow sets what an item does when a write would pass its capacity
// (default Expand).
func WithOverflow(o Overflow) Option { return buffer.WithOverflow(o) }

// Pool is Viki's pool of count items of capacity bytes each, reserved up
// front, on a [buffer.FixedPool].
//
// A Pool is safe for concurrent use by multiple goroutines; each Item it
// hands out is not. It must be created with New and not copied. Checkout
// never blocks: when every item is out it hands out a fresh one that the
// pool does not keep, and counts a miss, as Viki's did. The count×capacity
// bytes are one Go-heap allocation the GC does not scan; items are not zeroed.
type Pool struct {
	_ [0]sync.Mutex // go vet: must not be copied after first use

	fp *buffer.FixedPool
}

// New reserves count items of capacity bytes. It panics with
// "memkit/vikibytepool: " and the reason for a non-positive count or
// capacity or an invalid option (Viki's New had no error result).
func New(count, capacity int, opts ...Option) *Pool {
	return &Pool{fp: newFixed("New", count, capacity, opts)}
}

func newFixed(fn string, count, capacity int, opts []Option) *buffer.FixedPool {
	fp, err := buffer.NewFixedPool(count, capacity, opts...)
	if err != nil {
		panic(fmt.Sprintf("memkit/vikibytepool: %s: %v", fn, err))
	}
	return fp
}

// Checkout returns an empty item; give it back with Item.Close. It
// allocates the Item header (about 40 bytes; a JsonItem about 110), so that
// a Close through a stale Item is always refused; the capacity-sized
// storage comes from the pool without allocating.
func (p *Pool) Checkout() *Item { return &Item{b: p.fp.Checkout()} }

// Len returns the number of items in the pool, ready for Checkout.
func (p *Pool) Len() int { return p.fp.Len() }

// Misses returns the number of Checkouts that found the pool empty.
func (p *Pool) Misses() int { return int(p.fp.Misses()) }

// Unwrap returns the buffer.FixedPool underneath, for ReadStats and
// TryCheckout.
func (p *Pool) Unwrap() *buffer.FixedPool { return p.fp }
