package ringbuf

import (
	"context"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/sysmem"
	"github.com/memkit/memkit/stats"
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

	// WithBudgetAlert: the threshold in records, the callback (nil for
	// none) and which side of the threshold the last call reported.
	alertAt int64
	alertFn func(used int64, above bool)
	above   atomic.Bool

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
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	switch {
	case slots < 1 || slots > MaxSlots:
		return nil, fmt.Errorf("memkit/ringbuf: slots %d must be between 1 and %d", slots, MaxSlots)
	case slotSize < 1 || slotSize > 1<<31-1:
		return nil, fmt.Errorf("memkit/ringbuf: slotSize %d must be between 1 and %d", slotSize, 1<<31-1)
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
	if cfg.alertFn != nil {
		// Records of slotSize bytes at or above the threshold.
		r.alertAt, r.alertFn = (cfg.alertAt-1)/int64(slotSize)+1, cfg.alertFn
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
	if r.alertFn != nil {
		r.alert()
	}
	return nil
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
	if r.alertFn != nil {
		r.alert()
	}
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

// recordReady reports whether the oldest record is published.
func (r *Ring) recordReady() bool {
	h := r.head.Load()
	return r.slotAt(h).seq.Load() == h+1
}

// Slot is a slot lent by [Ring.Reserve] or [Ring.Peek]. It is a plain
// value, valid until it is handed back with [Ring.Commit] or
// [Ring.Release]; its bytes must not be used after that. It belongs to one
// goroutine at a time: it may be handed to another goroutine, which then
// commits or releases it, but two must not use it at once. The zero Slot
// is lent by no ring; Commit and Release panic on it.
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
	if r.alertFn != nil {
		r.alert()
	}
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
	if s.peek || s.p == nil || r.slotAt(s.pos).seq.Load() != s.pos || int64(r.tail.Load()-s.pos) <= 0 ||
		s.p != r.slotPtr(s.pos) {
		if checked.Enabled {
			r.chk.badReturn("Commit", s)
		}
		panic(msgNotReserved)
	}
	if checked.Enabled {
		r.chk.giveBack(s.pos, "Commit")
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
	if r.alertFn != nil {
		r.alert()
	}
	return s, true
}

// Release hands back a slot lent by [Ring.Peek]. It panics with
// "memkit/ringbuf: Release of a slot not peeked" for a slot already
// released or not from this ring's Peek: one from [Ring.Reserve] too,
// committed or not, which would otherwise free the slot of a record a
// reader may still hold.
func (r *Ring) Release(s Slot) {
	if !s.peek || s.p == nil || r.slotAt(s.pos).seq.Load() != s.pos+1 || int64(r.head.Load()-s.pos) <= 0 ||
		s.p != r.slotPtr(s.pos) {
		if checked.Enabled {
			r.chk.badReturn("Release", s)
		}
		panic(msgNotPeeked)
	}
	if checked.Enabled {
		r.chk.giveBack(s.pos, "Release")
		r.chk.freed(s.pos)
	}
	r.free(s.pos)
}

// alert calls the WithBudgetAlert callback for each crossing of its
// threshold since the last call, computing the records in the ring from
// the positions: no counter of its own on the hot path. It rereads them
// after each flip, so that when writers and readers race, the state the
// last of them leaves agrees with the ring.
func (r *Ring) alert() {
	for {
		live := max(int64(r.tail.Load()-r.head.Load()), 0)
		above := live >= r.alertAt
		if r.above.Load() == above {
			return
		}
		if r.above.CompareAndSwap(!above, above) {
			r.alertFn(live*int64(r.slotSize), above)
		}
	}
}

// positions returns the read and write positions at one moment: the
// write position as it was while the read position was h, so that
// 0 <= t-h <= capacity.
func (r *Ring) positions() (h, t uint64) {
	for range 8 {
		h = r.head.Load()
		t = r.tail.Load()
		if r.head.Load() == h {
			return h, t
		}
	}
	// Readers keep moving: t, loaded after h, is at least h.
	return h, h + min(t-h, uint64(r.capacity))
}

// Dropped returns the number of records the [Overwrite] policy dropped to
// make room.
func (r *Ring) Dropped() uint64 { return r.dropped.Load() }

// ReadStats overwrites *st with a snapshot of the ring's statistics; it
// never allocates. A record counts as one object of slotSize bytes:
// Allocs counts records written, Frees records read or dropped by the
// [Overwrite] policy (see [Ring.Dropped] for those alone), LiveObjects
// records in the ring, and Failures writes refused by [Reject] or given up
// by [Block]. ReservedBytes is the ring's memory, allocated once at New.
// Classes holds one row, for the slot size.
//
// ReadStats is safe to call from any goroutine while others use the ring
// (a scraper of memkit.Publish or a Prometheus collector): it only loads
// the ring's atomic positions and counters, and costs the ring's users
// nothing. Its fields agree with each other: Allocs - Frees is
// LiveObjects, at most [Ring.Slots].
func (r *Ring) ReadStats(st *stats.Stats) {
	st.Reset()
	h, t := r.positions()
	live := t - h
	size := uint64(r.slotSize)
	st.InUseBytes = live * size
	st.ReservedBytes = uint64(len(r.mem))
	st.LiveObjects = live
	st.Allocs = t - r.start
	st.Frees = h - r.start
	st.Failures = r.rejected.Load()
	st.Grows = 1
	st.Classes = append(st.Classes, stats.ClassStats{
		Size:          size,
		InUseBytes:    st.InUseBytes,
		ReservedBytes: st.ReservedBytes,
		LiveObjects:   live,
		IdleObjects:   uint64(len(r.slots)) - live,
		Allocs:        st.Allocs,
		Frees:         st.Frees,
		Grows:         1,
	})
}
