// Package ringbuf is a bounded first-in, first-out queue of byte records,
// each copied into a fixed-size slot of one region taken at [New], for
// many writers and readers. Pick it over a channel of []byte when the
// records are bytes of bounded size: a Write copies into memory the ring
// owns, so nothing is allocated or recycled per record; a full ring
// follows a [Policy] (reject, overwrite the oldest, or block) instead of
// only blocking; records can be built and read in place; and its
// statistics show depth, drops and rejections. Pick a channel for values
// that hold pointers, for select over several sources, or for close as a
// signal. It succeeds the seed's slab ring buffer, without its mutex, its
// per-write allocation or its silent data loss.
//
//	r, _ := ringbuf.New(10, 64, ringbuf.WithPolicy(ringbuf.Overwrite))
//	r.Write(rec)       // copies rec into a slot
//	n, ok := r.Read(p) // copies the oldest record out
//
// # Policies
//
// When every slot holds a record, [Ring.Write] follows the ring's
// [Policy]: [Reject] (the default) returns [ErrFull]; [Overwrite] drops the
// oldest record, as the seed's ring does, and counts it ([Ring.Dropped]);
// [Block] waits for space, or until the context of [Ring.WriteContext]
// ends. A record longer than a slot is an error ([ErrTooLarge]), never a
// truncation.
//
// # Zero copy
//
// [Ring.Reserve] lends the next free slot to build a record in place and
// [Ring.Commit] publishes it; [Ring.Peek] lends the oldest record to read
// in place and [Ring.Release] hands its slot back.
//
// # Budget
//
// A ring's budget is its size, fixed at [New]: slots × slotSize bytes,
// taken once, never more. When every slot holds a record, Write follows the
// ring's [Policy]. [WithBudgetAlert] calls a function when the records in
// the ring cross a threshold, up or down, for load shedding before the ring
// is full; it is computed from the positions the ring keeps anyway, and
// counts whole records. As in every memkit package, its threshold must be
// > 0 and its function non-nil; here the threshold must also be within the
// ring's size, and [New] returns an error otherwise.
//
// # Checked build
//
// Built with the memkitdebug tag (go test -tags memkitdebug ./...), a ring
// checks its lent slots and reports each mistake with a panic whose value
// is an error (a *memkit.Misuse) naming the operation and the
// mistake, with the stacks of the slot's lend and, where it was handed
// back, of its Commit or Release:
//
//   - a Commit or Release of a slot handed back before (a double free), of
//     the zero Slot or a slot of another ring (a foreign free), or of a
//     slot lent by the other operation (a stale handle); a release build
//     panics on each of these too, with the messages above, in O(1);
//   - a write through a slot's bytes after Commit: the record's checksum
//     and guard bytes over the rest of its slot are checked when it is
//     read, peeked or dropped;
//   - a write through a slot's bytes after its record was read or
//     released: the free slot is filled with a poison pattern, checked when
//     a writer claims it on the next lap;
//   - leaks: memkit.Leaks lists the slots lent and not handed back, with
//     the stack of each lend.
//
// A Slot is opaque, so its start cannot move, and its bytes end at the end
// of its slot. After reporting a write after free, the ring stays usable:
// a record found changed is dropped, and a slot found written gets an empty
// record. The checked build records a stack per lend and per hand-back
// and touches every byte of a slot at each write and read: lending costs
// microseconds, and Write and Read about ten times what they cost in a
// release build.
//
// # Typed records
//
// [Typed] carries values of a pointer-free type T, checked once per type:
// the ring's memory is not scanned by the GC, so a T holding a string or a
// pointer is refused at [NewTyped], with an error naming the field.
//
// # Implementation
//
// Positions are 64-bit counters claimed by compare-and-swap, and each slot
// carries a sequence number that says whether it is free for the writer of
// a position or holds the record for its reader (D. Vyukov's bounded
// queue design), so neither side takes a lock and the counters wrap
// around safely.
package ringbuf
