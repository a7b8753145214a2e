package ringbuf

import (
	"context"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/sysmem"
)

// Ring is a bounded queue of records in fixed-size slots, for any number of
// writers and readers: [Ring.Write] copies a record into a slot and
// [Ring.Read] copies the oldest one out, first in, first out.
// [Ring.Reserve]/[Ring.Commit] and [Ring.Peek]/[Ring.Release] lend a slot
// instead, so that a record is built or read in place, without a copy.
//
// A Ring is safe for concurrent use by multiple goroutines. The zero value
// is not usable: a Ring must be created with [New]. A Ring must not be
// copied after first use.
//
// Write and Read cost one compare-and-swap on a shared position, one
// atomic store to the slot's sequence number, a few atomic loads and the
// copy of the record, and never allocate; under contention the
// compare-and-swap may be retried. On amd64 both the compare-and-swap and
// the store are locked instructions: a Write+Read pair costs four, the
// least a ring for many writers and many readers needs in Go, where an
// atomic store is sequentially consistent. When the ring is full,
// Write follows the ring's [Policy]: [Reject] (the default) returns
// [ErrFull], [Overwrite] drops the oldest record and counts it, [Block]
// waits for space. A record longer than a slot is refused with
// [ErrTooLarge], never truncated.
//
// The ring holds one allocation of slots × slotSize bytes, the slot count
// rounded up to a power of two (at least 2): by default on the Go heap,
// where the GC never scans it, or from the function set with
// [WithMemory] (a bytepool, a slab, off-heap memory); plus 16 bytes of bookkeeping per slot and about 200 bytes of
// padded counters: at most twice the memory of the records it can hold.
// Slots are not zeroed between records: a lent slot holds what its
// previous record left. That size is the ring's budget: it never takes
// more memory ([WithBudgetAlert] signals when the records in it cross a
// threshold).
type Ring struct {
	_    [64]byte
	tail atomic.Uint64 // next position to write
	_    [56]byte
	head atomic.Uint64 // next position to read
	_    [56]byte

	mask     uint64 // len(slots) - 1
	capacity int64  // records the ring holds at most: the slots asked for
	slotSize int
	policy   Policy
	start    uint64
	slots    []slot
	mem      []byte

	dropped  atomic.Uint64
	rejected atomic.Uint64

	// WithBudgetAlert's edge, its threshold rounded up to whole records
	// (see Ring.alert); the zero Edge for none. alertAt is a copy of that
	// threshold, 0 for none: the one field the warm path reads, kept in
	// the Ring so that Write and Read need no other file to decide.
	edge    budget.Edge
	alertAt int64

	// The checked build's state (-tags memkitdebug); nil otherwise.
	chk *ringChecked

	// Waiting: writers for a slot to be freed (by Read, Release, Peek or a
	// drop), readers (and Overwrite's writers) for a record to be
	// published. The counts are written only while someone waits.
	space   waitq
	records waitq
}

// slot is the bookkeeping of one slot: its sequence number says whose turn
// it is (position p may write it when seq == p, read it when seq == p+1).
type slot struct {
	seq atomic.Uint64
	n   uint32 // length of the record it holds
	_   uint32
}

// New returns a ring of slots slots of slotSize bytes each, or an error
// naming the bad parameter: slots must be between 1 and [MaxSlots],
// slotSize between 1 and 2³¹-1, every option non-nil and valid, and the
// ring's memory (slots rounded up to a power of two, × slotSize bytes,
// plus 16 bytes per slot) something the system can allocate now: New
// asks it first, so that a ring too large for the machine is an error, not
// the runtime's fatal "out of memory".
func New(slots, slotSize int, opts ...Option) (*Ring, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := cfg.check(slots, slotSize); err != nil {
		return nil, err
	}
	n := 2 // at least 2, so that "written" (seq p+1) and "free for the next lap" (seq p+n) differ
	for n < slots {
		n *= 2
	}
	// At most 2³⁰ × 2³¹ bytes, plus 2³⁴: no overflow in 64 bits.
	size := uint64(n) * uint64(slotSize)
	need := uint64(n) * uint64(unsafe.Sizeof(slot{}))
	if cfg.memory == nil {
		need += size
	}
	if size > uint64(maxInt) || !sysmem.Available(need) {
		return nil, fmt.Errorf("memkit/ringbuf: %d slots of %d bytes need %d bytes, more than the system can allocate now; use fewer or smaller slots",
			n, slotSize, need)
	}
	var mem []byte
	if cfg.memory != nil {
		mem = cfg.memory(n * slotSize)
		if len(mem) < n*slotSize {
			return nil, fmt.Errorf("memkit/ringbuf: Memory returned %d bytes; %d slots of %d need %d", len(mem), n, slotSize, n*slotSize)
		}
		mem = mem[: n*slotSize : n*slotSize]
	} else {
		mem = make([]byte, n*slotSize)
	}
	r := &Ring{
		mask:     uint64(n - 1),
		capacity: int64(slots),
		slotSize: slotSize,
		policy:   cfg.policy,
		start:    cfg.start,
		slots:    make([]slot, n),
		mem:      mem,
		space:    newWaitq(),
		records:  newWaitq(),
	}
	r.tail.Store(cfg.start)
	r.head.Store(cfg.start)
	for k := range uint64(n) {
		p := cfg.start + k
		r.slots[p&r.mask].seq.Store(p)
	}
	if cfg.HasAlert() {
		// The alert counts whole records: its threshold is the bytes of
		// the fewest records at or above it. check keeps it within the
		// ring's slots × slotSize bytes, so the product does not overflow.
		threshold, fn := cfg.Alert()
		records := (threshold-1)/int64(slotSize) + 1
		r.alertAt = records * int64(slotSize)
		r.edge = budget.NewEdge(r.alertAt, fn)
	}
	if checked.Enabled {
		r.chk = newRingChecked(r)
	}
	return r, nil
}

const maxInt = int(^uint(0) >> 1)

// Slots returns the number of records the ring holds at most.
func (r *Ring) Slots() int { return int(r.capacity) }

// SlotSize returns the size of a slot, the longest record.
func (r *Ring) SlotSize() int { return r.slotSize }

// Policy returns the ring's policy when full.
func (r *Ring) Policy() Policy { return r.policy }

// Len returns the number of records in the ring, counting those being
// written or read at the moment.
func (r *Ring) Len() int {
	t := r.tail.Load()
	return int(max(int64(t-r.head.Load()), 0))
}

// slotMem returns the memory of the slot of position p.
func (r *Ring) slotMem(p uint64) []byte {
	off := uintptr(p&r.mask) * uintptr(r.slotSize)
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.mem)), off)), r.slotSize)
}

// slotPtr returns the address of the slot of position p.
func (r *Ring) slotPtr(p uint64) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.mem)), uintptr(p&r.mask)*uintptr(r.slotSize))
}

// slotAt returns the bookkeeping of the slot of position p, without the
// bounds check of r.slots[p&r.mask], which New makes needless: len(r.slots)
// is r.mask+1.
func (r *Ring) slotAt(p uint64) *slot {
	return (*slot)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.slots)), uintptr(p&r.mask)*unsafe.Sizeof(slot{})))
}

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
