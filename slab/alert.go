package slab

import (
	"sync"
	"sync/atomic"
)

// alertQueue delivers a Shared's budget alert outside its shard locks.
// The budget crosses its threshold while a shard is locked (when the shard
// takes or releases a slab); the alert it calls there only records the
// crossing, and the method that locked the shard calls it for real once
// the shard is unlocked, so that the user's function may call any method
// of the arena, ReadStats included, without hanging on the lock its own
// caller holds.
type alertQueue struct {
	fn      func(used int64, above bool)
	pending atomic.Bool // q is not empty: the one load the methods pay
	mu      sync.Mutex  // guards q
	q       []crossing
	calling sync.Mutex // held by the goroutine that delivers
}

// crossing is one call of the alert waiting to be delivered.
type crossing struct {
	used  int64
	above bool
}

// record is the budget's callback: it queues the crossing.
func (q *alertQueue) record(used int64, above bool) {
	q.mu.Lock()
	q.q = append(q.q, crossing{used, above})
	q.mu.Unlock()
	q.pending.Store(true)
}

// deliver calls the alert for every queued crossing, in order, on the
// calling goroutine, which must hold no shard lock. A goroutine that finds
// another delivering leaves its crossings to that one, which loops until
// the queue is empty; so an alert that takes a slab itself does not wait
// on itself.
func (q *alertQueue) deliver() {
	for q.pending.Load() && q.calling.TryLock() {
		for {
			q.mu.Lock()
			batch := q.q
			q.q = nil
			q.pending.Store(false)
			q.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			for _, c := range batch {
				q.fn(c.used, c.above)
			}
		}
		q.calling.Unlock()
	}
}
