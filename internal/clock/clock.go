// Package clock is the monotonic clock of memkit's time-based policies
// (bytepool's retention), which tests of any package replace with one they
// move, so that no test sleeps to see time pass.
package clock

import (
	"sync/atomic"
	"time"
)

// epoch is the origin of the real clock.
var epoch = time.Now()

// now is the clock in use: nil for the real one.
var now atomic.Pointer[func() int64]

// Now returns the time in nanoseconds on the monotonic clock, since an
// arbitrary origin, or the test's clock if one is set.
func Now() int64 {
	if f := now.Load(); f != nil {
		return (*f)()
	}
	return int64(time.Since(epoch))
}

// Set makes Now read f until the returned func puts the real clock back.
// For tests.
func Set(f func() int64) (restore func()) {
	now.Store(&f)
	return func() { now.Store(nil) }
}
