package ringbuf

import (
	"context"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// Slot is a slot lent by [Ring.Reserve] or [Ring.Peek]. It is a plain
// value, valid until it is handed back with [Ring.Commit] or
// [Ring.Release]; its bytes must not be used after that. It belongs to one
// goroutine at a time: it may be handed to another goroutine, which then
// commits or releases it, but two must not use it at once. The zero Slot
// is lent by no ring; Commit and Release panic on it.
//
// The checked build (-tags memkitdebug) reports a mistake with a lent slot
// as a *memkit.Misuse with the stacks of the lend and of its hand-back: a
// second Commit or Release, one of another ring's or the zero Slot, one of
// a slot the other operation lent; a write through the bytes after Commit
// (checksum and guard bytes, checked when the record is read, peeked or
// dropped) or after the record was read or released (poison, checked when
// a writer claims the slot on the next lap). memkit.Leaks lists the
// slots lent and not handed back. After such a report the ring stays
// usable: a changed record is dropped, a written free slot gets an empty
// record. Lending then costs microseconds, and Write and Read about ten
// times what they cost in a release build.
type Slot struct {
	// Four fields in 24 bytes, so that the compiler keeps a Slot in
	// registers.
	p    unsafe.Pointer // the slot's memory
	n    uint32         // bytes lent: the slot's size (Reserve) or the record's (Peek)
	peek bool           // lent by Peek, not Reserve
	pos  uint64
}

// Bytes returns the slot's memory: the whole slot for a reserved slot, the
// record for a peeked one.
func (s Slot) Bytes() []byte { return unsafe.Slice((*byte)(s.p), s.n) }

// Reserve lends the next free slot for a writer to fill in place, following
// the ring's policy when full as [Ring.WriteContext] does. Hand it back
// with [Ring.Commit] soon: readers wait behind an uncommitted slot. It
// panics with "memkit/ringbuf: nil Context" if ctx is nil.
func (r *Ring) Reserve(ctx context.Context) (Slot, error) {
	if ctx == nil {
		panic(msgNilContext)
	}
	pos, ok := r.tryClaimWrite()
	if !ok {
		var err error
		if pos, err = r.reserve(ctx); err != nil {
			return Slot{}, err
		}
	}
	if checked.Enabled {
		r.chk.claimed(pos, "Reserve")
		r.chk.lend(pos, "Reserve", r.slotSize)
	}
	r.alert()
	return Slot{p: r.slotPtr(pos), n: uint32(r.slotSize), pos: pos}, nil
}

// Commit publishes the first n bytes of a slot from [Ring.Reserve] as a
// record. It panics with "memkit/ringbuf: Commit of a slot not reserved"
// for a slot already committed or not from this ring's Reserve (one from
// [Ring.Peek] included), and with
// "memkit/ringbuf: Commit length outside the slot" if n is negative or
// longer than the slot.
func (r *Ring) Commit(s Slot, n int) {
	if n < 0 || n > r.slotSize {
		panic(msgCommitRange)
	}
	r.mustBeLent(s, false, s.pos, r.tail.Load(), "Commit", msgNotReserved)
	if checked.Enabled {
		r.chk.committed(s.pos, n)
	}
	r.publish(s.pos, n)
}

// Peek lends the oldest record for a reader to use in place, and reports
// false if there is none. The record leaves the ring, but its slot stays
// taken until it is handed back with [Ring.Release]: a writer that reaches
// it on the next lap gets [ErrFull] under [Reject] and waits under
// [Overwrite] and [Block] (see [Ring.Write]), so release it soon.
func (r *Ring) Peek() (Slot, bool) {
	pos, ok := r.tryClaimRead()
	if !ok {
		if pos, ok = r.claimRead(); !ok {
			return Slot{}, false
		}
	}
	// The record left the ring: a Block writer waiting for room may go on.
	r.space.wake()
	s := Slot{p: r.slotPtr(pos), n: r.slotAt(pos).n, pos: pos, peek: true}
	if checked.Enabled {
		r.chk.taken(pos, "Peek")
		r.chk.lend(pos, "Peek", int(s.n))
	}
	r.alert()
	return s, true
}

// Release hands back a slot lent by [Ring.Peek]. It panics with
// "memkit/ringbuf: Release of a slot not peeked" for a slot already
// released or not from this ring's Peek: one from [Ring.Reserve] too,
// committed or not, which would otherwise free the slot of a record a
// reader may still hold.
func (r *Ring) Release(s Slot) {
	r.mustBeLent(s, true, s.pos+1, r.head.Load(), "Release", msgNotPeeked)
	if checked.Enabled {
		r.chk.freed(s.pos)
	}
	r.free(s.pos)
}

// lent reports whether s is a slot this ring lent, by Peek (peek) or by
// Reserve, and not handed back since: its slot's sequence number still
// says it is being written (seq is pos, Reserve) or read (seq is pos+1,
// Peek), and moved, the position the lend moved (tail or head), is past
// it. O(1).
func (r *Ring) lent(s Slot, peek bool, seq, moved uint64) bool {
	return s.peek == peek && s.p != nil && r.slotAt(s.pos).seq.Load() == seq && int64(moved-s.pos) > 0 &&
		s.p == r.slotPtr(s.pos)
}

// mustBeLent panics with msg (the checked build: with a report of op)
// unless s is lent as lent says, and in the checked build records its
// hand-back by op.
func (r *Ring) mustBeLent(s Slot, peek bool, seq, moved uint64, op, msg string) {
	if !r.lent(s, peek, seq, moved) {
		if checked.Enabled {
			r.chk.badReturn(op, s)
		}
		panic(msg)
	}
	if checked.Enabled {
		r.chk.giveBack(s.pos, op)
	}
}
