// Package clock is the clock of memkit's time-based policies (bytepool's
// retention): the monotonic time and the timers they run on, which tests of
// any package replace with a [Fake] they move, so that no test sleeps to
// see time pass.
package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// A Clock tells the time and runs funcs later.
type Clock interface {
	// Now returns the time in nanoseconds since an arbitrary origin; it
	// never goes back.
	Now() int64
	// AfterFunc runs f on its own goroutine, or the Clock's, once d has
	// passed.
	AfterFunc(d time.Duration, f func())
}

// system is the monotonic clock and the runtime's timers.
type system struct{}

// epoch is the origin of the real clock.
var epoch = time.Now()

func (system) Now() int64                          { return int64(time.Since(epoch)) }
func (system) AfterFunc(d time.Duration, f func()) { time.AfterFunc(d, f) }

// current is the clock in use: nil for the real one.
var current atomic.Pointer[Clock]

func get() Clock {
	if c := current.Load(); c != nil {
		return *c
	}
	return system{}
}

// Now returns the time on the clock in use.
func Now() int64 { return get().Now() }

// AfterFunc runs f once d has passed on the clock in use.
func AfterFunc(d time.Duration, f func()) { get().AfterFunc(d, f) }

// Set makes c the clock in use until the returned func puts the real one
// back. For tests.
func Set(c Clock) (restore func()) {
	current.Store(&c)
	return func() { current.Store(nil) }
}

// Fake is a clock that moves only when told to, for tests. Its zero value
// reads 0 and has no timers; it is safe for concurrent use.
type Fake struct {
	mu     sync.Mutex
	now    int64
	timers []fakeTimer
}

type fakeTimer struct {
	at int64
	f  func()
}

// Now returns the time the Fake was moved to.
func (c *Fake) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc runs f in the Advance that moves the clock d past now.
func (c *Fake) AfterFunc(d time.Duration, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timers = append(c.timers, fakeTimer{c.now + int64(d), f})
}

// Advance moves the clock d forward and runs, on the caller's goroutine,
// every func whose time has come, in the order they were set. A func set
// while they run waits for a later Advance.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.now += int64(d)
	var due []func()
	keep := c.timers[:0]
	for _, t := range c.timers {
		if t.at <= c.now {
			due = append(due, t.f)
		} else {
			keep = append(keep, t)
		}
	}
	clear(c.timers[len(keep):])
	c.timers = keep
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}
