package arena

import (
	"fmt"
	"github.com/memkit/memkit/internal/option"

	"github.com/memkit/memkit/internal/budget"
)

// Option configures an [Arena] built by [NewArena], a [Typed] built by
// [NewTyped], or the arenas of a [Pool] built by [NewPool]. The
// constructor checks the options together and panics with a
// "memkit/arena: " message naming the first one out of range.
type Option func(*config)

// DefaultChunkSize is the size of the chunks an arena takes from the heap
// when no [WithChunkSize] option is given.
const DefaultChunkSize = 64 << 10

// MaxChunkSize is the largest chunk size [WithChunkSize] accepts (1 GiB), so
// that chunk arithmetic never overflows, on every platform.
const MaxChunkSize = 1 << 30

type config struct {
	budget.Options // WithBudget and WithBudgetAlert

	chunkSize int // as WithChunkSize gave it, checked by newConfig
	chunk     uintptr
	account   func(delta int64) error
	alert     *budget.Budget // WithBudgetAlert's, with no limit; nil for none
}

func defaultConfig() config { return config{chunkSize: DefaultChunkSize, chunk: DefaultChunkSize} }

// newConfig applies opts to the defaults, checks the result and builds
// what it asks for; it panics with the first mistake, as the constructors
// document. pool is set for NewPool's options.
func newConfig(opts []Option, pool bool) config {
	c := defaultConfig()
	if err := option.Apply(&c, opts); err != nil {
		panic("memkit/arena: " + err.Error())
	}
	if err := c.check(pool); err != nil {
		panic("memkit/arena: " + err.Error())
	}
	c.chunk = uintptr(c.chunkSize)
	if c.HasAlert() {
		threshold, fn := c.Alert()
		c.alert = budget.New(0, threshold, fn) // the arena enforces the limit itself
	}
	return c
}

// check returns what is wrong with the options, one case per mistake, or
// nil. The message has no package prefix: newConfig adds it.
func (c *config) check(pool bool) error {
	if c.chunkSize < 1 || c.chunkSize > MaxChunkSize {
		return fmt.Errorf("chunk size %d out of range [1, 1GiB]", c.chunkSize)
	}
	o := c.Options // WithBudget, WithBudgetAlert
	if threshold, fn := o.Alert(); pool && threshold > 0 && fn != nil {
		// A Pool's alert watches all its arenas together, its budget
		// bounds each one: the alert may be above the budget. A threshold
		// of 1 is within any valid budget, so Check judges the rest.
		o.SetAlert(1, fn)
	}
	return o.Check()
}

// WithChunkSize sets the size in bytes of the chunks the arena takes from
// the heap (default [DefaultChunkSize]): the memory a typed arena bumps
// through, between 1 and [MaxChunkSize]; outside that range the
// constructor panics. Each element type with pointers has chunks of its
// own, and pointer-free types share theirs, so an arena holds at least one
// chunk per pointerful type it allocates: small chunks suit thousands of
// small concurrent arenas, big ones suit batch jobs. A request larger than
// a quarter of the chunk size gets an allocation of its own, which
// [Arena.Reset] drops.
func WithChunkSize(n int) Option {
	return func(c *config) { c.chunkSize = n }
}

// WithBudget limits the memory the arena holds (its reserved bytes: chunks
// in use, chunks kept for reuse and dedicated allocations) to n bytes; n
// must be > 0 (leave the option out for no limit), or the constructor
// panics. When a request does not fit in what is left, the last chunk is
// made smaller to fit; when it does not fit at all, TryNew-style calls
// ([TryNew], [TryMakeSlice], [Typed.TryNew]) return [ErrBudget] and leave
// the arena unchanged, while [New], [MakeSlice] and the other calls fall
// back to the Go heap, counted as [memkit.Stats] HeapFallbacks. For a
// [Pool] the budget is per arena. It is checked only when the arena takes
// a chunk, never per object.
func WithBudget(n int64) Option {
	return func(c *config) { c.SetLimit(n) }
}

// WithAccount reports the arena's memory to an external account, such as a
// server-wide memory monitor: f is called with a positive delta before the
// arena takes that many bytes of chunk memory, and with a negative delta
// when it gives memory back ([Arena.Free], chunks [Arena.Reset] drops, and
// an arena of a [Pool], or one built with this option, that the GC
// collects without a Free). If f returns an error for a positive delta the
// arena does not take the memory and the request fails as if over budget:
// TryNew-style calls return an error that wraps both [ErrBudget] and f's
// error. f may be called from any goroutine, so it must be safe for
// concurrent use; it must not call back into the arena.
func WithAccount(f func(delta int64) error) Option {
	return func(c *config) { c.account = f }
}

// WithBudgetAlert calls fn with the bytes the arena holds (its reserved
// bytes, as [WithBudget] counts them) when they rise to threshold or more
// (above true) and when they fall back below it (above false): a signal for
// load shedding, before a budget refuses memory. For a [Pool] the alert is
// the pool's, on the memory all its arenas hold together (Stats
// ReservedBytes of [Pool.ReadStats]). It is evaluated only when an arena
// takes a chunk or gives memory back, never on New, so it costs the hot
// path nothing. fn runs on the goroutine whose call crossed the threshold
// (or, for an arena the GC collects without a Free, on a cleanup
// goroutine); it must be quick, must be safe for concurrent use for a
// Pool, and must not call back into the arena. threshold must be > 0, fn
// must not be nil, and with a [WithBudget] budget the threshold of an
// arena's alert must not be above it (a Pool's may be, its budget being per
// arena): the constructor panics otherwise.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.SetAlert(threshold, fn) }
}
