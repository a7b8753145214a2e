// Package ringbuf is a bounded ring of fixed-size slots for many writers
// and readers: the seed's slab ring buffer, without its mutex, its
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
// # Typed records
//
// [Typed] carries values of a pointer-free type T, checked once with
// [slab.CheckPointerFree]: the ring's memory is not scanned by the GC, so a
// T holding a string or a pointer is refused at [NewTyped].
//
// # Implementation
//
// Positions are 64-bit counters claimed by compare-and-swap, and each slot
// carries a sequence number that says whether it is free for the writer of
// a position or holds the record for its reader (D. Vyukov's bounded
// queue design), so neither side takes a lock and the counters wrap
// around safely.
package ringbuf
