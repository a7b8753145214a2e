package buffer

import (
	"fmt"

	"github.com/memkit/memkit/bytepool"
)

// Option configures a [Pool] built by [NewPool] or a [FixedPool] built by
// [NewFixedPool]. Each option says which of the two reads it; giving a
// constructor an option it does not read, or a nil Option, is an error.
type Option func(*config)

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
// own, a calibrated default size, and the Expand overflow policy.
type config struct {
	bytes       *bytepool.Pool
	defaultSize int // 0: calibrate
	overflow    Overflow
	budget      int64 // 0: none
	alertAt     int64
	alertFn     func(used int64, above bool)

	setDefault, setOverflow, setBudget, setAlert bool

	nilOption int // 1 + the index of the first nil Option, or 0
}

// WithBytePool sets the bytepool.Pool buffers take their storage from
// (default: a Pool of their own, with bytepool's default options, so that
// [Pool.ReadStats] reports only the buffers). Read by [NewPool], and by
// [NewFixedPool] for the storage of expanded buffers.
func WithBytePool(p *bytepool.Pool) Option { return func(c *config) { c.bytes = p } }

// WithDefaultSize fixes the storage a Buffer from [Pool.Get] takes on its
// first write at n bytes (rounded up to bytepool's class), instead of
// calibrating it to what the program writes. n must be between 1 and
// bytepool's largest class. Read by [NewPool] only.
func WithDefaultSize(n int) Option {
	return func(c *config) { c.defaultSize, c.setDefault = n, true }
}

// WithOverflow sets what a [FixedPool] buffer does when a write would pass
// the pool's size (default [Expand]). Read by [NewFixedPool] only.
func WithOverflow(o Overflow) Option {
	return func(c *config) { c.overflow, c.setOverflow = o, true }
}

// WithBudget bounds the bytes taken from the heap, beyond what is reserved
// up front (default: no bound); n must be positive.
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
func WithBudget(n int64) Option {
	return func(c *config) { c.budget, c.setBudget = n, true }
}

// WithBudgetAlert calls fn when the bytes charged to the budget (see
// [WithBudget]; no limit is needed) rise to threshold or more (above true)
// and when they fall back below it (above false), once per crossing, for
// load shedding. threshold must be positive and fn not nil (either is an
// error at construction). For a [FixedPool] the bytes charged are those of
// live misses and expansions: fn is called on those slow paths only, never
// by the Checkout or Close of a reserved buffer. For a [Pool] it is
// bytepool.WithBudgetAlert on the Pool's own bytepool. fn must be quick and
// must not block.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.alertAt, c.alertFn, c.setAlert = threshold, fn, true }
}

// budgetErr checks what both constructors read the same way: that no
// option is nil, and the budget options.
func (c *config) budgetErr() error {
	if c.nilOption > 0 {
		return errorf("option %d is nil", c.nilOption-1)
	}
	if c.setBudget && c.budget < 1 {
		return errorf("Budget %d must be positive", c.budget)
	}
	if c.setAlert && c.alertAt < 1 {
		return errorf("BudgetAlert threshold %d must be positive", c.alertAt)
	}
	if c.setAlert && c.alertFn == nil {
		return errorf("BudgetAlert function is nil")
	}
	return nil
}

// newConfig applies opts, noting the first nil one for budgetErr.
func newConfig(opts []Option) config {
	var c config
	for i, o := range opts {
		if o == nil {
			if c.nilOption == 0 {
				c.nilOption = i + 1
			}
			continue
		}
		o(&c)
	}
	return c
}
