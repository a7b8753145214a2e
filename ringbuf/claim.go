package ringbuf

import (
	"context"

	"github.com/memkit/memkit/internal/checked"
)

// The position protocol: how writers and readers claim positions, and
// hand a slot from one to the other through its sequence number.

// Why claimWrite found no slot.
const (
	claimed = iota
	full    // the ring holds as many records as it may
	busy    // the next slot's previous record is still being read (lent by Peek, or being copied by Read)
)

// claimWrite claims the next position for writing, or reports why it
// cannot: the ring is full, or the slot of position p is busy.
func (r *Ring) claimWrite() (uint64, int) {
	for {
		p := r.tail.Load()
		d := int64(p - r.head.Load())
		if d >= r.capacity {
			return 0, full
		}
		seq := r.slotAt(p).seq.Load()
		switch {
		case d < 0, seq != p && int64(seq-p) > 0:
			// p is stale: another writer took it.
		case seq != p:
			if r.tail.Load() == p {
				return p, busy
			}
		case r.tail.CompareAndSwap(p, p+1):
			return p, claimed
		}
	}
}

// tryClaimWrite is one try of claimWrite, small enough to inline in the
// fast paths: it claims the next position if its slot is free and the
// ring is not full, and otherwise reports false, leaving the reasons and
// the retries to reserve. A stale pos fails the compare-and-swap.
func (r *Ring) tryClaimWrite() (uint64, bool) {
	p := r.tail.Load()
	return p, r.slotAt(p).seq.Load() == p && int64(p-r.head.Load()) < r.capacity && r.tail.CompareAndSwap(p, p+1)
}

// tryClaimRead is one try of claimRead, small enough to inline in the fast
// paths: it claims the oldest record if it is written, and otherwise
// reports false, leaving the retries to claimRead.
func (r *Ring) tryClaimRead() (uint64, bool) {
	p := r.head.Load()
	return p, r.slotAt(p).seq.Load() == p+1 && r.head.CompareAndSwap(p, p+1)
}

// claimRead claims the oldest record, or reports that there is none ready
// (the ring is empty, or its oldest record is still being written).
func (r *Ring) claimRead() (uint64, bool) {
	for {
		p := r.head.Load()
		seq := r.slotAt(p).seq.Load()
		switch d := int64(seq - (p + 1)); {
		case d < 0:
			return 0, false
		case d > 0:
			// p is stale: another reader took it.
		case r.head.CompareAndSwap(p, p+1):
			return p, true
		}
	}
}

// publish makes the record of position p visible to readers.
func (r *Ring) publish(p uint64, n int) {
	s := r.slotAt(p)
	s.n = uint32(n)
	s.seq.Store(p + 1)
	r.records.wake()
}

// free hands the slot of position p, just read, to the writer of the next
// lap.
func (r *Ring) free(p uint64) {
	r.slotAt(p).seq.Store(p + r.mask + 1)
	r.space.wake()
}

// reserve claims a position for writing, following the policy when full:
// under Overwrite and Block it waits, as long as ctx allows, for what it
// needs: a reader to hand back the slot it must write (Overwrite and
// Block), a reader to free any slot (Block), or the writer of the oldest
// record to publish it, so that it can be dropped (Overwrite).
func (r *Ring) reserve(ctx context.Context) (uint64, error) {
	for {
		p, why := r.claimWrite()
		if why == claimed {
			return p, nil
		}
		if r.policy == Reject {
			r.rejected.Add(1)
			return 0, ErrFull
		}
		var err error
		switch {
		case why == busy:
			// Dropping other records would not free this slot.
			err = r.space.wait(ctx, func() bool { return r.tail.Load() != p || int64(r.slotAt(p).seq.Load()-p) >= 0 })
		case r.policy == Block:
			err = r.space.wait(ctx, func() bool { return int64(r.tail.Load()-r.head.Load()) < r.capacity })
		default: // Overwrite
			if h, ok := r.claimRead(); ok {
				if checked.Enabled {
					r.chk.taken(h, "Write")
					r.chk.freed(h)
				}
				r.free(h)
				r.dropped.Add(1)
				continue
			}
			err = r.records.wait(ctx, r.oldestReady)
		}
		if err != nil {
			r.rejected.Add(1)
			return 0, err
		}
	}
}

// oldestReady reports whether the oldest record is published, or the ring
// no longer full.
func (r *Ring) oldestReady() bool {
	h := r.head.Load()
	return r.slotAt(h).seq.Load() == h+1 || int64(r.tail.Load()-h) < r.capacity
}

// recordReady reports whether the oldest record is published.
func (r *Ring) recordReady() bool {
	h := r.head.Load()
	return r.slotAt(h).seq.Load() == h+1
}
