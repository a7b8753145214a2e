package ringbuf

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
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

	// Blocking: a waiter counts itself, re-checks, then waits on its
	// channel; whoever makes progress signals when someone waits.
	writeWaiters atomic.Int32
	readWaiters  atomic.Int32
	notFull      chan struct{}
	notEmpty     chan struct{}

	// WithBudgetAlert: the threshold in records, the callback (nil for
	// none) and which side of the threshold the last call reported.
	alertAt int64
	alertFn func(used int64, above bool)
	above   atomic.Bool

	// The checked build's state (-tags memkitdebug); nil otherwise.
	chk *ringChecked
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
// slotSize positive, and their product must fit in memory.
func New(slots, slotSize int, opts ...Option) (*Ring, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case slots < 1 || slots > MaxSlots:
		return nil, fmt.Errorf("ringbuf: slots %d must be between 1 and %d", slots, MaxSlots)
	case slotSize < 1 || slotSize > 1<<31-1:
		return nil, fmt.Errorf("ringbuf: slotSize %d must be between 1 and %d", slotSize, 1<<31-1)
	case cfg.policy != Reject && cfg.policy != Overwrite && cfg.policy != Block:
		return nil, fmt.Errorf("ringbuf: Policy %d is not Reject, Overwrite or Block", int(cfg.policy))
	}
	n := 2 // at least 2, so that "written" (seq p+1) and "free for the next lap" (seq p+n) differ
	for n < slots {
		n *= 2
	}
	if uint64(n)*uint64(slotSize) > uint64(^uint(0)>>1)/2 {
		return nil, fmt.Errorf("ringbuf: slots %d × slotSize %d does not fit in memory", slots, slotSize)
	}
	var mem []byte
	if cfg.memory != nil {
		mem = cfg.memory(n * slotSize)
		if len(mem) < n*slotSize {
			return nil, fmt.Errorf("ringbuf: Memory returned %d bytes; %d slots of %d need %d", len(mem), n, slotSize, n*slotSize)
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
		notFull:  make(chan struct{}, 1),
		notEmpty: make(chan struct{}, 1),
	}
	r.tail.Store(cfg.start)
	r.head.Store(cfg.start)
	for k := range uint64(n) {
		p := cfg.start + k
		r.slots[p&r.mask].seq.Store(p)
	}
	if cfg.alertFn != nil && cfg.alertAt > 0 {
		// Records of slotSize bytes at or above the threshold.
		r.alertAt, r.alertFn = (cfg.alertAt-1)/int64(slotSize)+1, cfg.alertFn
	}
	if checked.Enabled {
		r.chk = newRingChecked(r)
	}
	return r, nil
}

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
// cannot.
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
				return 0, busy
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
	if r.readWaiters.Load() > 0 {
		signal(r.notEmpty)
	}
}

// free hands the slot of position p, just read, to the writer of the next
// lap.
func (r *Ring) free(p uint64) {
	r.slotAt(p).seq.Store(p + r.mask + 1)
	if r.writeWaiters.Load() > 0 {
		signal(r.notFull)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// reserve claims a position for writing, following the policy when full.
func (r *Ring) reserve(ctx context.Context) (uint64, error) {
	for {
		p, why := r.claimWrite()
		switch {
		case why == claimed:
			return p, nil
		case r.policy == Reject:
			r.rejected.Add(1)
			return 0, ErrFull
		case why == busy:
			// Wait for the reader to hand the slot back; dropping other
			// records would not free it.
			if err := ctx.Err(); err != nil && r.policy == Block {
				r.rejected.Add(1)
				return 0, err
			}
			runtime.Gosched()
			continue
		}
		switch r.policy {
		case Overwrite:
			if p, ok := r.claimRead(); ok {
				if checked.Enabled {
					r.chk.taken(p, "Write")
					r.chk.freed(p)
				}
				r.free(p)
				r.dropped.Add(1)
			} else {
				// The oldest record is still being written: let its
				// writer finish.
				runtime.Gosched()
			}
		case Block:
			if err := r.waitNotFull(ctx); err != nil {
				r.rejected.Add(1)
				return 0, err
			}
		}
	}
}

// waitNotFull waits until a reader may have freed a slot, or ctx ends.
func (r *Ring) waitNotFull(ctx context.Context) error {
	r.writeWaiters.Add(1)
	defer r.writeWaiters.Add(-1)
	// Re-check after counting ourselves: a reader that freed a slot
	// before it could see us is visible now.
	if int64(r.tail.Load()-r.head.Load()) < r.capacity {
		return nil
	}
	select {
	case <-r.notFull:
		// Pass the wake-up on, in case more writers wait and more slots
		// were freed than signals got through.
		if r.writeWaiters.Load() > 1 {
			signal(r.notFull)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitNotEmpty waits until a writer may have published a record, or ctx
// ends.
func (r *Ring) waitNotEmpty(ctx context.Context) error {
	r.readWaiters.Add(1)
	defer r.readWaiters.Add(-1)
	if h := r.head.Load(); r.slotAt(h).seq.Load() == h+1 {
		return nil
	}
	select {
	case <-r.notEmpty:
		if r.readWaiters.Load() > 1 {
			signal(r.notEmpty)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Write copies p into a slot as the newest record. It returns
// [ErrTooLarge] if p is longer than a slot, and, when the ring is full,
// follows the ring's policy: [ErrFull] under [Reject]; under [Overwrite]
// it drops the oldest record and succeeds; under [Block] it waits for a
// reader to free a slot, without limit (see [Ring.WriteContext]).
func (r *Ring) Write(p []byte) error { return r.write(context.Background(), p, "Write") }

// WriteContext is [Ring.Write] that, under the [Block] policy, gives up
// when ctx ends and returns its error (counted in Stats.Failures). Under
// other policies ctx is not consulted.
func (r *Ring) WriteContext(ctx context.Context, p []byte) error {
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
// then returns its error.
func (r *Ring) ReadContext(ctx context.Context, p []byte) (int, error) {
	for {
		if n, ok := r.Read(p); ok {
			return n, nil
		}
		if err := r.waitNotEmpty(ctx); err != nil {
			return 0, err
		}
	}
}

// Slot is a slot lent by [Ring.Reserve] or [Ring.Peek]. It is a plain
// value, valid until it is handed back with [Ring.Commit] or
// [Ring.Release]; its bytes must not be used after that. It belongs to one
// goroutine at a time: it may be handed to another goroutine, which then
// commits or releases it, but two must not use it at once. The zero Slot
// is lent by no ring; Commit and Release panic on it.
type Slot struct {
	tag slotTag // first: no space in a release build
	buf []byte
	pos uint64
}

// Bytes returns the slot's memory: the whole slot for a reserved slot, the
// record for a peeked one.
func (s Slot) Bytes() []byte { return s.buf }

// Reserve lends the next free slot for a writer to fill in place, following
// the ring's policy when full as [Ring.WriteContext] does. Hand it back
// with [Ring.Commit] soon: readers wait behind an uncommitted slot.
func (r *Ring) Reserve(ctx context.Context) (Slot, error) {
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
	return Slot{buf: unsafe.Slice((*byte)(r.slotPtr(pos)), r.slotSize), pos: pos}, nil
}

// Commit publishes the first n bytes of a slot from [Ring.Reserve] as a
// record. It panics with "memkit/ringbuf: Commit of a slot not reserved"
// for a slot already committed or not from this ring's Reserve, and with
// "memkit/ringbuf: Commit length outside the slot" if n is negative or
// longer than the slot.
func (r *Ring) Commit(s Slot, n int) {
	if n < 0 || n > r.slotSize {
		panic(msgCommitRange)
	}
	if s.buf == nil || r.slotAt(s.pos).seq.Load() != s.pos || int64(r.tail.Load()-s.pos) <= 0 ||
		unsafe.Pointer(unsafe.SliceData(s.buf)) != r.slotPtr(s.pos) {
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
// [Overwrite] and [Block], so release it soon.
func (r *Ring) Peek() (Slot, bool) {
	pos, ok := r.tryClaimRead()
	if !ok {
		if pos, ok = r.claimRead(); !ok {
			return Slot{}, false
		}
	}
	s := Slot{buf: unsafe.Slice((*byte)(r.slotPtr(pos)), r.slotAt(pos).n), pos: pos}
	if checked.Enabled {
		r.chk.taken(pos, "Peek")
		r.chk.lend(pos, "Peek", len(s.buf))
		s.tag.setPeek()
	}
	if r.alertFn != nil {
		r.alert()
	}
	return s, true
}

// Release hands back a slot lent by [Ring.Peek]. It panics with
// "memkit/ringbuf: Release of a slot not peeked" for a slot already
// released or not from this ring's Peek.
func (r *Ring) Release(s Slot) {
	if s.buf == nil || r.slotAt(s.pos).seq.Load() != s.pos+1 || int64(r.head.Load()-s.pos) <= 0 ||
		unsafe.Pointer(unsafe.SliceData(s.buf)) != r.slotPtr(s.pos) {
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
func (r *Ring) ReadStats(st *stats.Stats) {
	st.Reset()
	h := r.head.Load()
	t := r.tail.Load()
	live := uint64(max(int64(t-h), 0))
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
