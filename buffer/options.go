package buffer

import (
	"fmt"

	"github.com/memkit/memkit/bytepool"
)

// Option configures a [Pool] built by [NewPool] or a [FixedPool] built by
// [NewFixedPool]. Each option says which of the two reads it; giving a
// constructor an option it does not read is an error.
type Option func(*config)

// Overflow is what a [FixedPool] buffer does when a write would pass its
// size.
type Overflow int

const (
	// Expand, the default, moves the buffer's contents to larger storage
	// from the Go heap (through bytepool) and goes on: the write succeeds
	// and the pool counts an expansion. On Close the larger storage is
	// returned to bytepool and the pool keeps the buffer at its original
	// size.
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

	setDefault, setOverflow bool
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

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c
}
