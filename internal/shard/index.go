package shard

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Index maps address ranges (the blocks or slabs of a sharded allocator)
// to the shard that holds each, so that a free from any goroutine finds
// its shard without taking a lock: the entries are a sorted slice copied
// on every change (a slow path: a range added or given back) and read with
// one atomic load (a plain load on the platforms Go supports). The zero
// value is an empty index. It is safe for concurrent use.
type Index struct {
	p  atomic.Pointer[[]Owner]
	mu sync.Mutex // serializes changes
}

// Owner is an entry of an [Index]: shard Shard holds [Base, End). An Owner
// a lookup returned is never changed afterwards.
type Owner struct {
	Base, End uintptr
	Shard     uint32
}

// entries returns the current entries, sorted by Base.
func (x *Index) entries() []Owner {
	if p := x.p.Load(); p != nil {
		return *p
	}
	return nil
}

// Add records that shard holds [base, end) and reports whether it did:
// not if the range overlaps one the index holds.
func (x *Index) Add(base, end uintptr, shard uint32) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	old := x.entries()
	i := sort.Search(len(old), func(i int) bool { return old[i].Base >= base })
	if i > 0 && old[i-1].End > base || i < len(old) && old[i].Base < end {
		return false
	}
	idx := make([]Owner, 0, len(old)+1)
	idx = append(append(append(idx, old[:i]...), Owner{base, end, shard}), old[i:]...)
	x.p.Store(&idx)
	return true
}

// Remove forgets the range that starts at base, if the index holds one.
func (x *Index) Remove(base uintptr) {
	x.mu.Lock()
	defer x.mu.Unlock()
	old := x.entries()
	i := sort.Search(len(old), func(i int) bool { return old[i].Base >= base })
	if i == len(old) || old[i].Base != base {
		return
	}
	idx := make([]Owner, 0, len(old)-1)
	idx = append(append(idx, old[:i]...), old[i+1:]...)
	x.p.Store(&idx)
}

// Find returns the entry whose range holds [p, e) (p itself when e == p),
// or nil: the last range that starts at or below p, by a binary search
// written out (sort.Search's closure would not be inlined).
func (x *Index) Find(p, e uintptr) *Owner {
	idx := x.entries()
	lo, hi := 0, len(idx)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if idx[m].Base > p {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo == 0 || p >= idx[lo-1].End || e > idx[lo-1].End || e < p {
		return nil
	}
	return &idx[lo-1]
}

// Len returns the number of ranges the index holds.
func (x *Index) Len() int { return len(x.entries()) }
