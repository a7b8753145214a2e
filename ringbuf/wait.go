package ringbuf

import (
	"context"
	"sync/atomic"
)

// waitq is where goroutines wait for one kind of change of a ring's
// state — a slot freed, for writers; a record published, for readers and
// Overwrite's writers — and are woken by whoever makes it.
//
// A waiter first rechecks its condition a bounded number of times without
// yielding, a few microseconds: most waits end within another goroutine's
// copy of a record, and yielding (runtime.Gosched) or sleeping can cost a
// whole scheduler time slice (10ms) when busy goroutines outnumber the
// processors. Then it counts itself, checks its condition again and sleeps
// on the queue's channel and its context.
//
// Whoever changes the state stores it (an atomic store) and then loads the
// count: with both sequentially consistent, either the waiter's second
// check sees the change or the changer sees the waiter and leaves a token
// in the channel (a buffer of one, so tokens for several changes merge). A
// woken waiter whose condition holds passes a token on if others wait, so
// that merged changes reach them all; one whose condition does not hold
// keeps it, since the waiters of a queue all wait for the same thing (the
// slot at the write position free and the ring not full; the record at the
// read position published): if it cannot go on, none can, and passing the
// token on would only bounce it between them. Without waiters, a change
// costs the load of the count.
type waitq struct {
	n atomic.Int32 // goroutines counted in to sleep
	c chan struct{}
}

func newWaitq() waitq { return waitq{c: make(chan struct{}, 1)} }

// spinChecks is how many times a waiter checks its condition before it
// sleeps: a short, bounded while (each check is two or three atomic loads).
const spinChecks = 200

// wake wakes a waiter, if any, after a change of state.
func (q *waitq) wake() {
	if q.n.Load() > 0 {
		q.token()
	}
}

// token leaves a token in the channel unless one is there.
func (q *waitq) token() {
	select {
	case q.c <- struct{}{}:
	default:
	}
}

// wait returns nil once ready reports true, or ctx's error once ctx ends
// first. A change of state that can make ready true must be followed by
// q.wake, or the waiter may sleep through it.
func (q *waitq) wait(ctx context.Context, ready func() bool) error {
	for range spinChecks {
		if ready() {
			return nil
		}
	}
	q.n.Add(1)
	defer q.n.Add(-1)
	for !ready() {
		select {
		case <-q.c:
			if ready() && q.n.Load() > 1 {
				q.token() // for the others
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
