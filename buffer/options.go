package buffer

import (
	"fmt"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/budget"
)

// PoolOption configures a [Pool] built by [NewPool]: [WithBytePool],
// [WithDefaultSize], [WithBudget] and [WithBudgetAlert]. The compiler
// refuses an option NewPool does not read ([WithOverflow]).
type PoolOption interface{ applyPool(*config) }

// FixedOption configures a [FixedPool] built by [NewFixedPool]:
// [WithBytePool], [WithOverflow], [WithBudget] and [WithBudgetAlert]. The
// compiler refuses an option NewFixedPool does not read
// ([WithDefaultSize]).
type FixedOption interface{ applyFixed(*config) }

// CommonOption is an option both [NewPool] and [NewFixedPool] read:
// [WithBytePool], [WithBudget] and [WithBudgetAlert].
type CommonOption interface {
	PoolOption
	FixedOption
}

// poolOption, fixedOption and commonOption are the options' types: each
// implements the interfaces of the constructors that read it.
type (
	poolOption   func(*config)
	fixedOption  func(*config)
	commonOption func(*config)
)

func (o poolOption) applyPool(c *config)    { o(c) }
func (o fixedOption) applyFixed(c *config)  { o(c) }
func (o commonOption) applyPool(c *config)  { o(c) }
func (o commonOption) applyFixed(c *config) { o(c) }

// Overflow is what a [FixedPool] buffer does when a write would pass its
// size.
type Overflow int

const (
	// Expand, the default, moves the buffer's contents to larger storage
	// from the Go heap (through bytepool) and goes on: the write succeeds
	// and the pool counts an expansion. On Close the larger storage is
	// returned to bytepool and the pool keeps the buffer at its original
	// size. Past the pool's budget ([WithBudget]) the write is refused as
	// under Strict.
	Expand Overflow = iota
	// Strict refuses the write with io.ErrShortWrite and writes nothing:
	// a buffer never holds more than the pool's size. ReadFrom keeps what
	// fit and returns io.ErrShortWrite.
	Strict
)

// String returns the policy's name: "Expand", "Strict", or "Overflow(n)".
func (o Overflow) String() string {
	switch o {
	case Expand:
		return "Expand"
	case Strict:
		return "Strict"
	}
	return fmt.Sprintf("Overflow(%d)", int(o))
}

// The defaults are those of the zero config: a bytepool.Pool of the Pool's
// own, a calibrated default size, the Expand overflow policy, and no budget.
type config struct {
	budget.Options // WithBudget, WithBudgetAlert

	bytes       *bytepool.Pool
	defaultSize int // 0: calibrate
	overflow    Overflow
	setDefault  bool

	nilOption int // 1 + the index of the first nil option, or 0
}

// WithBytePool sets the bytepool.Pool buffers take their storage from
// (default: a Pool of their own, with bytepool's default options, so that
// [Pool.ReadStats] reports only the buffers). Read by [NewPool], and by
// [NewFixedPool] for the storage of expanded buffers.
func WithBytePool(p *bytepool.Pool) CommonOption {
	return commonOption(func(c *config) { c.bytes = p })
}

// WithDefaultSize fixes the storage a Buffer from [Pool.Get] takes on its
// first write at n bytes (rounded up to bytepool's class), instead of
// calibrating it to what the program writes. n must be between 1 and
// bytepool's largest class. Read by [NewPool] only.
func WithDefaultSize(n int) PoolOption {
	return poolOption(func(c *config) { c.defaultSize, c.setDefault = n, true })
}

// WithOverflow sets what a [FixedPool] buffer does when a write would pass
// the pool's size (default [Expand]). Read by [NewFixedPool] only.
func WithOverflow(o Overflow) FixedOption {
	return fixedOption(func(c *config) { c.overflow = o })
}

// WithBudget bounds the bytes taken from the heap, beyond what is reserved
// up front (default: no bound). n must be > 0: leave the option out for no
// bound.
//
// For a [FixedPool] the count×size bytes reserved at [NewFixedPool] are
// its own; the budget bounds what misses (a fresh buffer of the pool's size
// when none is idle) and expansions (storage from bytepool when a write
// outgrows an [Expand] buffer) hold while they are live. At the budget an
// expansion is refused as under [Strict] — io.ErrShortWrite, nothing
// written, counted in Stats.Failures — and [FixedPool.TryCheckout] reports
// false instead of making a miss (Stats.Failures too). [FixedPool.Checkout]
// never fails: it still hands out a miss, counted in Stats.HeapFallbacks
// and charged, so the budget may be passed by the misses Checkout makes.
//
// For a [Pool], whose storage all comes from bytepool, it is the budget of
// the bytepool the Pool makes for itself (bytepool.WithBudget: at the
// budget, storage falls back to the heap, counted in Stats.HeapFallbacks);
// with [WithBytePool], set the budget on that bytepool instead.
func WithBudget(n int64) CommonOption {
	return commonOption(func(c *config) { c.SetLimit(n) })
}

// WithBudgetAlert calls fn when the bytes charged to the budget (see
// [WithBudget]; no limit is needed) rise to threshold or more (above true)
// and when they fall back below it (above false), once per crossing, for
// load shedding. threshold must be > 0, at most the budget if one is set,
// and fn not nil. For a [FixedPool] the bytes charged are those of live
// misses and expansions, and the alert is evaluated on those slow paths
// only (a miss, an expansion, and their Close), never by the Checkout or
// Close of a reserved buffer. For a [Pool] it is bytepool.WithBudgetAlert
// on the Pool's own bytepool. fn must be quick and must not block.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) CommonOption {
	return commonOption(func(c *config) { c.SetAlert(threshold, fn) })
}

// check returns what is wrong with what both constructors read the same
// way: a nil option, and the budget options (budget.Options.Check).
func (c *config) check() error {
	if c.nilOption > 0 {
		return errorf("option %d is nil", c.nilOption-1)
	}
	if err := c.Check(); err != nil {
		return errorf("%w", err)
	}
	return nil
}

// newConfig applies opts through apply, noting the first nil one for check.
func newConfig[O comparable](opts []O, apply func(O, *config)) config {
	var c config
	var none O
	for i, o := range opts {
		if o == none {
			if c.nilOption == 0 {
				c.nilOption = i + 1
			}
			continue
		}
		apply(o, &c)
	}
	return c
}
