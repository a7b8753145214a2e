package ringbuf

// Test-only access to internals.

// WithStart makes the ring's positions start at pos instead of 0, so that
// tests can run across the wrap-around of the 64-bit counters.
func WithStart(pos uint64) Option { return func(c *config) { c.start = pos } }

// SlotsAllocated reports the number of slots the ring allocated.
func (r *Ring) SlotsAllocated() int { return len(r.slots) }
