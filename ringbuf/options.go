package ringbuf

import (
	"fmt"
	"github.com/memkit/memkit/internal/option"

	"github.com/memkit/memkit/internal/budget"
)

// Policy is what [Ring.Write] does when every slot holds a record.
type Policy int

const (
	// Reject, the default, makes Write return [ErrFull] and leave the ring
	// unchanged; the rejection is counted in Stats.Failures.
	Reject Policy = iota
	// Overwrite drops the oldest record to make room, as the seed's ring
	// does. Every dropped record is counted ([Ring.Dropped], and in
	// Stats.Frees), never silently lost.
	//
	// It cannot drop a record a reader holds through [Ring.Peek]: a Write
	// that needs that slot waits for its [Ring.Release], and one that must
	// drop a record still being written waits for its [Ring.Commit]. A
	// goroutine that holds the Peek (or Reserve) a full ring's next Write
	// needs, and then calls Write itself, waits forever: the ring keeps no
	// goroutine identity, so it cannot tell that goroutine from a reader
	// on another one that will release soon. Release (or Commit) before
	// writing on the same goroutine, or use [Ring.WriteContext] with a
	// deadline, which then returns the context's error.
	Overwrite
	// Block makes Write wait until a reader frees a slot, and WriteContext
	// until then or until its context ends.
	Block
)

func (p Policy) String() string {
	switch p {
	case Reject:
		return "Reject"
	case Overwrite:
		return "Overwrite"
	case Block:
		return "Block"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// Option configures a [Ring] built by [New].
type Option func(*config)

// MaxSlots is the largest number of slots [New] accepts.
const MaxSlots = 1 << 30

// maxSlotSize is the largest slot size New accepts.
const maxSlotSize = 1<<31 - 1

type config struct {
	budget.Options // WithBudgetAlert; a ring's budget is its size

	policy Policy
	memory func(size int) []byte
	start  uint64 // first position; tests start near wrap-around
}

// newConfig applies opts to the defaults.
func newConfig(opts []Option) (config, error) {
	c := config{policy: Reject}
	if err := option.Apply(&c, opts); err != nil {
		return c, fmt.Errorf("memkit/ringbuf: %w", err)
	}
	return c, nil
}

// check returns what is wrong with New's parameters and the options, one
// case per mistake, or nil.
func (c *config) check(slots, slotSize int) error {
	threshold, _ := c.Alert() // 0 without the option
	if err := c.Options.Check(); err != nil {
		return fmt.Errorf("memkit/ringbuf: %w", err)
	}
	switch {
	case slots < 1 || slots > MaxSlots:
		return fmt.Errorf("memkit/ringbuf: slots %d must be between 1 and %d", slots, MaxSlots)
	case slotSize < 1 || slotSize > maxSlotSize:
		return fmt.Errorf("memkit/ringbuf: slotSize %d must be between 1 and %d", slotSize, maxSlotSize)
	case c.policy != Reject && c.policy != Overwrite && c.policy != Block:
		return fmt.Errorf("memkit/ringbuf: Policy %d is not Reject, Overwrite or Block", int(c.policy))
	case threshold > int64(slots)*int64(slotSize):
		return fmt.Errorf("memkit/ringbuf: WithBudgetAlert(%d, fn): the threshold is above the %d bytes of %d slots of %d, so the alert could never fire",
			threshold, int64(slots)*int64(slotSize), slots, slotSize)
	}
	return nil
}

// WithPolicy sets what Write does when the ring is full (default
// [Reject]).
func WithPolicy(p Policy) Option { return func(c *config) { c.policy = p } }

// WithMemory sets where the ring's slot memory comes from: memory(size)
// must return at least size bytes that nothing else uses while the ring
// does, for example a buffer from a bytepool.Pool, a chunk of a slab.Arena
// or an off-heap mapping. The memory must not hold Go pointers the GC needs
// to see, since the ring overwrites it with records. By default it is one
// make([]byte) on the Go heap.
func WithMemory(memory func(size int) []byte) Option { return func(c *config) { c.memory = memory } }

// WithBudgetAlert calls fn with the bytes of the records in the ring (as
// Stats.InUseBytes counts them: records × slot size) when they rise to
// threshold or more (above true) and when they fall back below it (above
// false): a signal for load shedding before the ring is full. The ring
// counts whole records, so threshold is rounded up to the bytes of a whole
// number of records. A ring's budget is its size, fixed at [New]: it never
// takes more memory, and a full ring follows its [Policy]; there is no
// WithBudget option.
//
// The ring keeps no counter for the alert: after each Write, Reserve, Read
// and Peek (the calls that move its positions) it computes the records in
// the ring from the two positions it already keeps, two atomic loads, and
// compares the side of the threshold with the last one reported, a load of
// a flag written only when the threshold is crossed. Without the option,
// those calls pay one predictable branch. fn runs on the goroutine whose
// call crossed the threshold; it must be quick and must not call back into
// the ring. threshold must be > 0 and at most the ring's slots × slotSize
// bytes, and fn must not be nil: [New] returns an error otherwise.
func WithBudgetAlert(threshold int64, fn func(used int64, above bool)) Option {
	return func(c *config) { c.SetAlert(threshold, fn) }
}
