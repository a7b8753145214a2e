package checked

import (
	"sort"
	"sync"
)

// Record is one allocation a Tracker knows of.
type Record struct {
	Addr  uintptr
	Size  int
	Alloc Stack
	Free  Stack // set once freed

	freeSeq uint64 // which of the tracker's frees ended it, for the ring
}

// keepFreed is how many freed records a Tracker keeps to name the first
// free of a double free.
const keepFreed = 1 << 14

// Tracker is the table of one allocator's live and recently freed blocks.
// It is safe for concurrent use.
type Tracker struct {
	allocator string
	mu        sync.Mutex
	live      map[uintptr]*Record
	freed     map[uintptr]*Record
	order     []freed // the last keepFreed frees, a ring
	next      int     // the oldest entry of order once it is full
	frees     uint64  // frees so far
	held      []held  // the quarantine, oldest first (see Hold)
	heldBytes int     // bytes in held
}

// freed is one entry of a Tracker's ring of recent frees.
type freed struct {
	addr uintptr
	seq  uint64
}

// NewTracker returns an empty tracker for the named allocator ("bytepool").
func NewTracker(allocator string) *Tracker {
	return &Tracker{allocator: allocator, live: make(map[uintptr]*Record), freed: make(map[uintptr]*Record)}
}

// Allocator is the name the tracker reports under.
func (t *Tracker) Allocator() string { return t.allocator }

// Alloc records a block handed out at addr, with the stack of the
// allocator's caller (skip counts frames between that caller and Alloc's
// caller).
func (t *Tracker) Alloc(addr uintptr, size int, skip int) {
	r := &Record{Addr: addr, Size: size, Alloc: Callers(skip + 1)}
	t.mu.Lock()
	delete(t.freed, addr)
	t.live[addr] = r
	t.mu.Unlock()
}

// Free checks and records the free of the block at addr by op. It panics
// with a *Misuse for a block freed before (naming both stacks) or one it
// never handed out, and otherwise returns the block's record.
func (t *Tracker) Free(op string, addr uintptr, skip int) *Record {
	t.mu.Lock()
	r, ok := t.live[addr]
	if !ok {
		prev := t.freed[addr]
		t.mu.Unlock()
		m := &Misuse{Allocator: t.allocator, Op: op, Kind: ForeignFree, Addr: addr}
		if prev != nil {
			m.Kind, m.Size, m.Alloc, m.Free = DoubleFree, prev.Size, prev.Alloc, prev.Free
		}
		panic(m)
	}
	delete(t.live, addr)
	r.Free = Callers(skip + 1)
	t.retire(r)
	t.mu.Unlock()
	return r
}

// FreeRange records the free of [p, e), which lies inside the live record
// at addr, by op: the record is split into what stays live on either side
// (each keeping the allocation stack) and a freed record for [p, e) with
// the stack of the free, which it returns. It panics if no record is live
// at addr or [p, e) is not inside it: the caller checks that first.
func (t *Tracker) FreeRange(op string, addr, p, e uintptr, skip int) *Record {
	t.mu.Lock()
	r, ok := t.live[addr]
	if !ok || p < addr || e > addr+uintptr(r.Size) || e <= p {
		t.mu.Unlock()
		panic("checked: FreeRange outside a live record")
	}
	delete(t.live, addr)
	end := addr + uintptr(r.Size)
	if p > addr {
		t.live[addr] = &Record{Addr: addr, Size: int(p - addr), Alloc: r.Alloc}
	}
	if e < end {
		t.live[e] = &Record{Addr: e, Size: int(end - e), Alloc: r.Alloc}
	}
	f := &Record{Addr: p, Size: int(e - p), Alloc: r.Alloc, Free: Callers(skip + 1)}
	t.retire(f)
	t.mu.Unlock()
	return f
}

// Retire adds a block that was never live in the tracker (scratch memory
// handed out without bookkeeping, such as extent's Borrow) to the freed
// records, with its allocation stack and the stack of the call that ends
// it, so that a later write to it is reported with both.
func (t *Tracker) Retire(addr uintptr, size int, alloc Stack, skip int) {
	r := &Record{Addr: addr, Size: size, Alloc: alloc, Free: Callers(skip + 1)}
	t.mu.Lock()
	t.retire(r)
	t.mu.Unlock()
}

// retire adds r to the freed records, forgetting the oldest past keepFreed
// in O(1). t.mu must be held.
func (t *Tracker) retire(r *Record) {
	t.frees++
	r.freeSeq = t.frees
	e := freed{r.Addr, t.frees}
	if len(t.order) < keepFreed {
		t.order = append(t.order, e)
	} else {
		// Forget the oldest free, unless its address was freed again since
		// (then the map holds the newer record).
		old := t.order[t.next]
		if f := t.freed[old.addr]; f != nil && f.freeSeq == old.seq {
			delete(t.freed, old.addr)
		}
		t.order[t.next] = e
		t.next = (t.next + 1) % keepFreed
	}
	t.freed[r.Addr] = r
}

// recentFrees calls f with the freed records, newest first, until f
// returns false. t.mu must be held.
func (t *Tracker) recentFrees(f func(*Record) bool) {
	n := len(t.order)
	for i := range n {
		e := t.order[(t.next+n-1-i)%n]
		if r := t.freed[e.addr]; r != nil && r.freeSeq == e.seq && !f(r) {
			return
		}
	}
}

// Lookup returns the live record at addr, or nil.
func (t *Tracker) Lookup(addr uintptr) *Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live[addr]
}

// Freed returns the record of the block most recently freed at addr, or nil.
func (t *Tracker) Freed(addr uintptr) *Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.freed[addr]
}

// Live returns the blocks handed out and not freed, by address.
func (t *Tracker) Live() []Record {
	t.mu.Lock()
	out := make([]Record, 0, len(t.live))
	for _, r := range t.live {
		out = append(out, *r)
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// FreedContaining returns the most recently freed record whose bytes
// [Addr, Addr+Size) hold p, or nil. It costs O(freed records): it is meant
// for the way to a panic.
func (t *Tracker) FreedContaining(p uintptr) *Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	var found *Record
	t.recentFrees(func(r *Record) bool {
		if r.Addr <= p && p < r.Addr+uintptr(r.Size) {
			found = r
			return false
		}
		return true
	})
	return found
}

// LiveContaining returns the live record whose bytes [Addr, Addr+Size)
// hold p, or nil. It costs O(live records): it is meant for the way to a
// panic.
func (t *Tracker) LiveContaining(p uintptr) *Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.live {
		if r.Addr <= p && p < r.Addr+uintptr(r.Size) {
			return r
		}
	}
	return nil
}

// Reset forgets every live and freed record: for an allocator that gives
// all its memory back at once (Close), after which nothing it handed out
// is live and the addresses may be reused by anyone.
func (t *Tracker) Reset() {
	t.mu.Lock()
	clear(t.live)
	clear(t.freed)
	t.order = t.order[:0]
	t.mu.Unlock()
}
