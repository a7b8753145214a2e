package ringbuf

import (
	"context"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// Write copies p into a slot as the newest record. It returns
// [ErrTooLarge] if p is longer than a slot, and, when the ring is full,
// follows the ring's policy: [ErrFull] under [Reject]; under [Overwrite]
// it drops the oldest record and succeeds; under [Block] it waits for a
// reader to free a slot, without limit (see [Ring.WriteContext]).
//
// Under Overwrite and Block, Write also waits, without limit, when the slot
// it must fill still holds a record lent by [Ring.Peek] (until its
// [Ring.Release]), and under Overwrite when the oldest record, the one to
// drop, is still being written (lent by [Ring.Reserve], until its
// [Ring.Commit]). A goroutine that holds such a lend itself waits forever:
// use WriteContext to bound the wait. Waiting yields the processor a few
// times, then sleeps until a reader or writer makes progress.
func (r *Ring) Write(p []byte) error { return r.write(context.Background(), p, "Write") }

// WriteContext is [Ring.Write] that, whenever it waits (under [Overwrite]
// and [Block]), gives up when ctx ends and returns its error, counted in
// Stats.Failures. Under [Reject] it never waits. It panics with
// "memkit/ringbuf: nil Context" if ctx is nil.
func (r *Ring) WriteContext(ctx context.Context, p []byte) error {
	if ctx == nil {
		panic(msgNilContext)
	}
	return r.write(ctx, p, "WriteContext")
}

// write is Write and WriteContext (op names the caller in checked-build
// reports): claim a slot, copy p in, publish it.
func (r *Ring) write(ctx context.Context, p []byte, op string) error {
	if len(p) > r.slotSize {
		return ErrTooLarge
	}
	pos, ok := r.tryClaimWrite()
	if !ok {
		var err error
		if pos, err = r.reserve(ctx); err != nil {
			return err
		}
	}
	if checked.Enabled {
		r.chk.claimed(pos, op)
	}
	copy(unsafe.Slice((*byte)(r.slotPtr(pos)), len(p)), p) // len(p) <= r.slotSize
	if checked.Enabled {
		r.chk.committed(pos, len(p))
	}
	r.publish(pos, len(p))
	r.alert()
	return nil
}

// alert calls the WithBudgetAlert callback for each crossing of its
// threshold since the last call. It inlines into the calls that move the
// positions (Write, Reserve, Read, Peek), where a ring without the option
// pays one predictable branch on a field of its own (alertAt, not the
// Edge's accessor in internal/budget).
func (r *Ring) alert() {
	if r.alertAt != 0 {
		r.crossed()
	}
}

// crossed is alert's slow part. The ring keeps no counter for the alert:
// the bytes of the records in it come from the two positions it keeps
// anyway, reloaded after each flip, so that when writers and readers race,
// the side the last of them leaves reported agrees with the ring.
func (r *Ring) crossed() {
	for r.edge.Flip(r.recordBytes()) {
	}
}

// recordBytes returns the bytes of the records in the ring, slotSize per
// record, from the positions.
func (r *Ring) recordBytes() int64 {
	return max(int64(r.tail.Load()-r.head.Load()), 0) * int64(r.slotSize)
}

// Read copies the oldest record into p, removes it from the ring and
// returns its length, or reports false if the ring is empty (or its oldest
// record is still being written). p must be at least a slot long, so that
// no record is ever truncated: Read panics with "memkit/ringbuf: Read
// buffer shorter than a slot" otherwise.
func (r *Ring) Read(p []byte) (n int, ok bool) {
	if len(p) < r.slotSize {
		panic(msgShortRead)
	}
	pos, ok := r.tryClaimRead()
	if !ok {
		if pos, ok = r.claimRead(); !ok {
			return 0, false
		}
	}
	if checked.Enabled {
		r.chk.taken(pos, "Read")
	}
	// The record is at most a slot long, and p at least a slot.
	n = int(r.slotAt(pos).n)
	copy(unsafe.Slice((*byte)(unsafe.SliceData(p)), n), unsafe.Slice((*byte)(r.slotPtr(pos)), n))
	if checked.Enabled {
		r.chk.freed(pos)
	}
	r.free(pos)
	r.alert()
	return n, true
}

// ReadContext is [Ring.Read] that waits for a record until ctx ends, and
// then returns its error. Waiting yields the processor a few times, then
// sleeps until a writer publishes a record. It panics with
// "memkit/ringbuf: nil Context" if ctx is nil.
func (r *Ring) ReadContext(ctx context.Context, p []byte) (int, error) {
	if ctx == nil {
		panic(msgNilContext)
	}
	for {
		if n, ok := r.Read(p); ok {
			return n, nil
		}
		if err := r.records.wait(ctx, r.recordReady); err != nil {
			return 0, err
		}
	}
}
