package ringbuf

import (
	"context"
	"sync"
	"sync/atomic"
)

// waitq is where goroutines wait for one kind of change of a ring's
// state — a slot freed for writers, a record published for readers — and
// are woken by whoever makes it.
//
// A waiter first rechecks its condition a bounded number of times without
// yielding, a few microseconds: most waits end within another goroutine's
// copy of a record, and yielding (runtime.Gosched) or sleeping can cost a
// whole scheduler time slice (10ms) when busy goroutines outnumber the
// processors. Then it registers a channel of its own, checks its condition
// again and sleeps on the channel and its context. Whoever changes the state stores it (an
// atomic store) and then loads the count of waiters: with both sequentially
// consistent, either the waiter's second check sees the change or the
// changer sees the waiter and wakes every registered one. Waking all keeps
// no waiter asleep while its condition holds, whatever the others wait for;
// each rechecks and sleeps again if it lost. Without waiters, a change costs
// the load of the count.
type waitq struct {
	n    atomic.Int32 // registered waiters: len(ws)
	mu   sync.Mutex
	ws   []chan struct{} // registered, each empty, woken at most once
	idle []chan struct{} // empty channels kept for the next waiters
}

// spinChecks is how many times a waiter checks its condition before it
// sleeps: a short, bounded while (each check is two or three atomic loads).
const spinChecks = 200

// wake wakes the waiters, if any, after a change of state.
func (q *waitq) wake() {
	if q.n.Load() > 0 {
		q.wakeAll()
	}
}

func (q *waitq) wakeAll() {
	q.mu.Lock()
	for i, c := range q.ws {
		c <- struct{}{} // never blocks: c is empty and buffered
		q.ws[i] = nil
	}
	q.ws = q.ws[:0]
	q.n.Store(0)
	q.mu.Unlock()
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
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := q.register()
		if ready() {
			q.cancel(c)
			return nil
		}
		select {
		case <-c:
			q.keep(c)
		case <-ctx.Done():
			q.cancel(c)
			return ctx.Err()
		}
		if ready() {
			return nil
		}
	}
}

// register adds an empty channel to the waiters and returns it.
func (q *waitq) register() chan struct{} {
	q.mu.Lock()
	var c chan struct{}
	if n := len(q.idle); n > 0 {
		c = q.idle[n-1]
		q.idle[n-1] = nil
		q.idle = q.idle[:n-1]
	} else {
		c = make(chan struct{}, 1)
	}
	q.ws = append(q.ws, c)
	q.n.Store(int32(len(q.ws)))
	q.mu.Unlock()
	return c
}

// cancel removes c from the waiters, or, if a wake took it off first,
// empties it, and keeps it for reuse.
func (q *waitq) cancel(c chan struct{}) {
	q.mu.Lock()
	removed := false
	for i, w := range q.ws {
		if w == c {
			last := len(q.ws) - 1
			q.ws[i], q.ws[last] = q.ws[last], nil
			q.ws = q.ws[:last]
			q.n.Store(int32(last))
			removed = true
			break
		}
	}
	if !removed {
		<-c // the wake sent to c under q.mu, before this lock
	}
	q.idle = append(q.idle, c)
	q.mu.Unlock()
}

// keep keeps c, emptied by its wake, for reuse.
func (q *waitq) keep(c chan struct{}) {
	q.mu.Lock()
	q.idle = append(q.idle, c)
	q.mu.Unlock()
}
