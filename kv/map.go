package kv

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"sync/atomic"

	"github.com/memkit/memkit/internal/budget"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/offheap"
	"github.com/memkit/memkit/stats"
)

// MaxKeyLen is the longest key a [Map] stores (64 KiB - 1).
const MaxKeyLen = 1<<16 - 1

// MaxValueLen is the longest value a [Map] stores (1 GiB).
const MaxValueLen = 1 << 30

// Map is a map from byte keys to byte values whose keys, values and index
// the GC never scans: entries are copied into segments of off-heap memory
// (pointer-free Go heap memory where offheap does not map), and the index
// is an open-addressing table of 8-byte slots in the same kind of memory.
//
// A Map is safe for concurrent use by multiple goroutines. The zero value
// is not usable: a Map must be created with [New] and must not be copied.
// Call [Map.Close] to give its memory back to the OS; any use after that
// panics with "memkit/kv: use of a closed Map".
//
// Keys hash (hash/maphash, seeded per Map) to one of up to 256 shards, each
// behind its own sync.RWMutex, with its own index and segments, so readers
// of a shard run in parallel and writers of different shards do too.
// Costs, with k and v the key's and value's length:
//   - [Map.Get], [Map.Has], [Map.View]: a hash of k, a read lock, a probe of
//     the index (one 8-byte slot per step; a slot holds 28 bits of the hash,
//     so a key is compared only when they match), and for Get a copy of v
//     appended to dst. No allocation.
//   - [Map.Set]: a hash, a write lock, a probe, and a copy of k and v to the
//     end of the shard's current segment; an overwrite whose entry fits in
//     the old one's place is done there (the rest becomes dead). No allocation once the shard has
//     its segments and index; a new segment is one mmap per 256 KiB of
//     entries, an index growth one mmap and a rehash of the shard.
//   - [Map.Delete]: a probe, a backward-shift removal from the index (no
//     tombstones) and a mark on the entry.
//
// # Memory
//
// An entry takes 8 bytes of header plus k + v rounded up to 8 bytes, in a
// segment of 256 KiB (an entry over 128 KiB gets a segment of its own, given
// back as soon as it is deleted). The index takes 8 bytes per slot and
// grows by doubling when a shard's table is 13/16 full: 10 to 20 bytes per
// entry. Deleting or overwriting an entry leaves its bytes dead in their
// segment; once a shard's dead bytes pass 1/32 of its segments' bytes (and
// 64 KiB), the shard compacts the segment with the most dead bytes: its
// live entries slide down over the dead ones and the index follows, 64 KiB
// of the segment per step, one step in each Set or Delete on the shard
// until the pass is done (several in one while the dead bytes are past
// twice the threshold). The room freed at the segment's end is where later
// Sets append, so overwrites in steady state reuse resident memory without a
// system call or a page fault; once a shard holds more such room than a
// quarter segment (or its live bytes, if fewer) plus 1/128 of its entries'
// bytes, compaction gives the freed pages back to the OS (madvise) instead.
// A segment left with no live entry is unmapped. So the resident memory
// stays within about 5/128 of the live entries plus a quarter segment per
// shard, plus up to one partly written page per segment and the index,
// after any mix of overwrites and deletes of any
// sizes. A step holds only the shard's write lock, for at most 64 KiB of
// entries read and moved: readers of the other shards never wait, and
// readers of this one wait at most that long.
//
// Past its first 64 MiB of segments, a Map carves segments from 2 MiB
// regions (one mmap for eight segments); a region is unmapped when its last
// segment is. [WithHugePages] advises them for transparent huge pages, a
// trade of Get's TLB misses on a Map of gigabytes against the stalls of
// huge pages' first writes: see there.
//
// Memory is not zeroed beyond what mmap gives; entries hold only the bytes
// given to Set.
//
// # Statistics
//
// [Map.ReadStats] fills a stats.Stats, exactly (it takes each shard's read
// lock in turn): InUseBytes is the bytes of live entries (headers, keys,
// values and padding), ReservedBytes the segment pages written and not
// given back plus the index tables, LiveObjects the entries, FreeBytes the
// dead bytes awaiting compaction; Allocs counts entries stored by Set,
// Frees entries removed (deleted, overwritten, or evicted), Failures Sets
// that returned an error, Grows segments and index tables mapped, Releases
// segments and index tables unmapped and compactions that gave pages back.
type Map struct {
	shards  []shard
	shift   uint // hash >> shift is the shard
	seed    maphash.Seed
	heap    *offheap.Allocator
	bud     *budget.Budget
	evict   bool
	segSize int // bytes of a segment: 256 KiB, less with a small budget
	closed  atomic.Bool
	regions regions

	tooLarge atomic.Uint64 // Sets refused before a shard was chosen

	chk *checked.Tracker // the checked build's; nil otherwise
}

// New returns an empty Map configured by opts, or an error naming a bad
// option. It maps no memory until the first Set.
func New(opts ...Option) (*Map, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	heap, err := offheap.New()
	if err != nil {
		return nil, fmt.Errorf("memkit/kv: %w", err)
	}
	m := &Map{
		shards:  make([]shard, cfg.shards),
		shift:   uint(64 - bits.TrailingZeros(uint(cfg.shards))),
		seed:    maphash.MakeSeed(),
		heap:    heap,
		bud:     cfg.New(),
		evict:   cfg.evict,
		regions: regions{huge: cfg.huge},
		segSize: cfg.segSize,
	}
	for i := range m.shards {
		m.shards[i].m = m
	}
	if checked.Enabled {
		m.chk = checked.NewTracker("kv")
		checked.Register(m, m.chk)
	}
	return m, nil
}

// shardOf returns the shard of a key's hash: its top bits, which the index
// does not use.
func (m *Map) shardOf(h uint64) *shard {
	if m.shift == 64 {
		return &m.shards[0]
	}
	return &m.shards[h>>m.shift]
}

// hash returns the hash of key.
func (m *Map) hash(key []byte) uint64 { return maphash.Bytes(m.seed, key) }

// rlock read-locks the shard of h and panics if the Map is closed.
func (m *Map) rlock(h uint64) *shard {
	s := m.shardOf(h)
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		panic(msgClosed)
	}
	return s
}

// lock write-locks the shard of h and panics if the Map is closed.
func (m *Map) lock(h uint64) *shard {
	s := m.shardOf(h)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		panic(msgClosed)
	}
	return s
}

// Set stores a copy of value under a copy of key, replacing the key's
// value if it had one. It returns [ErrTooLarge] for a key over [MaxKeyLen]
// or a value over [MaxValueLen], [ErrBudget] if the entry does not fit in
// the [WithBudget] budget even after compaction (and the Map does not
// evict), and [ErrNoSpace] if the system refused memory; after an error
// the Map is unchanged. key and value may be nil or empty, and may be
// reused by the caller as soon as Set returns.
func (m *Map) Set(key, value []byte) error {
	if m == nil {
		panic(msgNil)
	}
	if len(key) > MaxKeyLen || len(value) > MaxValueLen {
		m.tooLarge.Add(1)
		return ErrTooLarge
	}
	h := m.hash(key)
	s := m.lock(h)
	err := s.set(h, key, value)
	s.mu.Unlock()
	return err
}

// Get appends the value of key to dst and returns the result and true, or
// dst and false if the key is absent. It does not allocate when dst has
// room for the value.
func (m *Map) Get(dst, key []byte) ([]byte, bool) {
	if m == nil {
		panic(msgNil)
	}
	h := m.hash(key)
	s := m.rlock(h)
	_, v := s.find(h, key)
	if v != 0 {
		dst = append(dst, s.value(v)...)
		if m.evict {
			s.touch(v)
		}
	}
	s.mu.RUnlock()
	return dst, v != 0
}

// Has reports whether key is in the Map.
func (m *Map) Has(key []byte) bool {
	if m == nil {
		panic(msgNil)
	}
	h := m.hash(key)
	s := m.rlock(h)
	_, v := s.find(h, key)
	if v != 0 && m.evict {
		s.touch(v)
	}
	s.mu.RUnlock()
	return v != 0
}

// View calls fn with the value of key, in place, without copying it, and
// reports whether the key was present (fn is not called if not).
//
// The slice is valid only until fn returns: do not keep it, or any slice
// of it, and do not write to it. fn runs with the key's shard read-locked,
// so it must be quick and must not call the Map (a Set or Delete in it
// deadlocks). The checked build (-tags memkitdebug) hands fn a copy that
// it poisons when fn returns: a slice kept and read later reads the poison
// byte, and one written to is reported as a write after free (by
// memkit.Leaks, or when the copy leaves the quarantine).
func (m *Map) View(key []byte, fn func(value []byte)) bool {
	if m == nil {
		panic(msgNil)
	}
	h := m.hash(key)
	s := m.rlock(h)
	defer s.mu.RUnlock()
	_, v := s.find(h, key)
	if v == 0 {
		return false
	}
	if m.evict {
		s.touch(v)
	}
	if checked.Enabled {
		m.lend("View", s.value(v), func(b []byte) { fn(b) })
	} else {
		fn(s.value(v))
	}
	return true
}

// Delete removes key and reports whether it was present.
func (m *Map) Delete(key []byte) bool {
	if m == nil {
		panic(msgNil)
	}
	h := m.hash(key)
	s := m.lock(h)
	ok := s.delete(h, key)
	s.mu.Unlock()
	return ok
}

// Len returns the number of entries. With other goroutines writing, it is
// the sum of each shard's count at the moment it was read.
func (m *Map) Len() int {
	if m == nil {
		panic(msgNil)
	}
	if m.closed.Load() {
		panic(msgClosed)
	}
	n := int64(0)
	for i := range m.shards {
		n += m.shards[i].count.Load()
	}
	return int(n)
}

// Range calls fn for every entry, shard by shard, until fn returns false.
// The key and value slices are valid only until fn returns, as in
// [Map.View] (the checked build lends poisoned copies too). fn runs with
// the entry's shard read-locked: it must not call the Map's Set or Delete
// (that deadlocks); collect the keys to change and change them after
// Range. Entries set or deleted concurrently in other shards may or may
// not be seen; within a shard, Range sees one consistent state.
func (m *Map) Range(fn func(key, value []byte) bool) {
	if m == nil {
		panic(msgNil)
	}
	for i := range m.shards {
		if !m.shards[i].rangeShard(fn) {
			return
		}
	}
}

// Evictions returns the number of entries a [WithEviction] Map dropped to
// make room, since it was created (0 for a Map without eviction).
func (m *Map) Evictions() uint64 {
	if m == nil {
		panic(msgNil)
	}
	var n uint64
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.RLock()
		n += s.evictions
		s.mu.RUnlock()
	}
	return n
}

// ReadStats overwrites *st with the Map's statistics (see the type's
// documentation for what each field counts). It may be called from any
// goroutine, also after Close; it takes each shard's read lock in turn,
// so it is exact per shard, and does not allocate.
func (m *Map) ReadStats(st *stats.Stats) {
	if m == nil {
		panic(msgNil)
	}
	st.Reset()
	for i := range m.shards {
		m.shards[i].addStats(st)
	}
	st.Failures += m.tooLarge.Load()
}

// Close gives every byte the Map mapped back to the OS and makes every
// later use of the Map panic with "memkit/kv: use of a closed Map", except
// ReadStats and Close, which returns nil again. Slices from View or Range
// must not be used after Close: their memory is unmapped, so touching them
// faults. Close waits for the calls in progress on each shard; it returns
// the first error the OS gave when unmapping, if any.
func (m *Map) Close() error {
	if m == nil {
		panic(msgNil)
	}
	m.closed.Store(true)
	var first error
	for i := range m.shards {
		if err := m.shards[i].close(); err != nil && first == nil {
			first = err
		}
	}
	if err := m.regions.close(m.heap); err != nil && first == nil {
		first = err
	}
	return first
}

var _ stats.StatsSource = (*Map)(nil)
