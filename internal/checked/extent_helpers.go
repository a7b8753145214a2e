package checked

// Helpers for allocators whose frees are ranges rather than whole blocks
// (extent frees any sub-slice of an allocation), and for lookups by an
// address inside a block rather than its start (buddy, offheap).

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
