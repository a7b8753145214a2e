package shard

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/memkit/memkit/internal/race"
)

// Idle is the set of idle items of an owner (a Bounded bytepool's region
// buffers), kept so that taking an item and giving it back take no locked
// instruction. Each item has a [Ticket], a 16-byte heap object holding
// the item's key and the address of its [Slot] (which the owner keeps
// beside the item), which sits in a sync.Pool (per P, no atomic on its
// own P's list) while the item is idle and in the slot while it is out. Neither Get nor Put writes the ticket,
// so tickets that share a cache line cost nothing when their items are
// used on different Ps; the slot, which Get and Put write, is the owner's
// to lay out.
//
// A sync.Pool drops what it holds across two GCs. A dropped ticket is
// unreachable, and a cleanup (runtime.AddCleanup) then puts its key on a
// locked spare list that Get takes from when the sync.Pool is empty: no
// item is lost, an item idle across two GCs costs a ticket made again (one
// allocation) on its next Get, and the owner may miss an item until the
// cleanups of the GC that dropped its ticket have run. An out item's slot
// keeps its ticket reachable, so a cleanup never recovers an item that is
// out. Under the race detector, where a sync.Pool drops a quarter of what
// it is given at random, idle tickets wait on a locked stack instead, so
// that an owner's reuse of its items is the release build's.
//
// Get and Put are safe for concurrent use. The slot is the owner's
// double-free check: [Slot.Take] of an idle item returns nil, an O(1) test.
// Two Takes of one out item made at the same instant by two goroutines may
// both get the ticket (the window is between the slot's load and its
// store, a few instructions), and the item is then handed out twice.
//
// Counts: each Get adds one to its item's slot with a plain add, on the
// cache line it writes anyway, and no counter is shared: the owner's
// statistics sum [Slot.Gets] over its slots, which it reads already to
// count the items out. The sum is exact once the Gets it should count
// happened before it (a WaitGroup, a channel), and within the Gets in
// flight otherwise.
type Idle struct {
	pool sync.Pool // *Ticket

	// locked: the race detector's build keeps idle tickets on stash.
	locked bool
	stash  []*Ticket

	mu        sync.Mutex
	spare     []uintptr // keys of idle items whose ticket is not in the pool: new, or collected
	made      atomic.Uint64
	recovered atomic.Uint64

	slotOf func(key uintptr) *Slot // the owner's slot of an item
	self   weak.Pointer[Idle]      // the cleanups' way back, which does not keep the Idle alive
}

// Ticket stands for one item: its key and its slot. (It holds a pointer,
// so it is an object of its own: the runtime packs small pointer-free
// objects together, which would delay its cleanup until its neighbours die
// too.)
type Ticket struct {
	key  uintptr
	slot *Slot
}

// Key returns the key of the ticket's item, as the owner gave it to
// [Idle.Add].
func (t *Ticket) Key() uintptr { return t.key }

// NewIdle returns an empty idle set whose owner keeps the slot of the item
// of key k at slotOf(k). slotOf runs when a ticket is made (the first Get
// of an item, and the first after its ticket was recovered).
func NewIdle(slotOf func(key uintptr) *Slot) *Idle { return newIdle(slotOf, race.Enabled) }

// newIdle is NewIdle, keeping idle tickets on a locked stack if locked.
func newIdle(slotOf func(key uintptr) *Slot, locked bool) *Idle {
	x := &Idle{slotOf: slotOf, locked: locked}
	x.self = weak.Make(x)
	x.pool.New = x.getSlow
	return x
}

// Add makes a new item, with the given key, idle. Items added last are
// taken first.
func (x *Idle) Add(key uintptr) {
	x.mu.Lock()
	x.spare = append(x.spare, key)
	x.mu.Unlock()
}

// Get takes an idle item, stores its ticket in its slot and returns the
// ticket, or nil when none is idle. Warm, it is a sync.Pool Get, and the
// store and the count in the slot: no locked instruction. It inlines
// into its caller: the sync.Pool's New is the slow path, getSlow.
func (x *Idle) Get() (t *Ticket) {
	if t = x.pool.Get().(*Ticket); t != nil { // from getSlow when the pool is empty, always under the race detector's locked stack
		t.slot.take(t)
	}
	return
}

// getSlow is the sync.Pool's New, Get when the pool is empty: the ticket
// last stashed (locked), or an item from the spare list with a ticket made
// for it, or a nil *Ticket when none is idle. It returns the ticket as an
// any, which holds a pointer without allocating.
func (x *Idle) getSlow() any {
	x.mu.Lock()
	if k := len(x.stash) - 1; k >= 0 {
		t := x.stash[k]
		x.stash[k] = nil
		x.stash = x.stash[:k]
		x.mu.Unlock()
		return t
	}
	k := len(x.spare) - 1
	if k < 0 {
		x.mu.Unlock()
		return (*Ticket)(nil) // a typed nil: Get's type assertion does not check for a nil any
	}
	key := x.spare[k]
	x.spare = x.spare[:k]
	x.mu.Unlock()
	t := &Ticket{key: key, slot: x.slotOf(key)}
	runtime.AddCleanup(t, recoverItem, cleanupArg{x.self, key})
	x.made.Add(1)
	return t
}

// cleanupArg is what the cleanup of a ticket needs: its key, and a weak
// pointer to the Idle (a strong one would keep it alive).
type cleanupArg struct {
	x   weak.Pointer[Idle]
	key uintptr
}

// recoverItem runs once a ticket is unreachable: the sync.Pool dropped it
// while its item was idle. It puts the item on the spare list.
func recoverItem(a cleanupArg) {
	x := a.x.Value()
	if x == nil {
		return
	}
	x.mu.Lock()
	x.spare = append(x.spare, a.key)
	x.mu.Unlock()
	x.recovered.Add(1)
}

// Put gives back the item of t, which the caller took from its slot.
func (x *Idle) Put(t *Ticket) {
	if race.Enabled && x.locked {
		x.mu.Lock()
		x.stash = append(x.stash, t)
		x.mu.Unlock()
		return
	}
	x.pool.Put(t)
}

// Made returns how many tickets were made: the first Get of each item, and
// one per item recovered since.
func (x *Idle) Made() uint64 { return x.made.Load() }

// Recovered returns how many items a cleanup put back on the spare list
// after the sync.Pool dropped their tickets.
func (x *Idle) Recovered() uint64 { return x.recovered.Load() }

// Slot is where an out item's ticket waits, kept by the owner beside the
// item: nil while the item is idle; and the item's Gets. The zero value is
// an idle item's. A slot must stay where it is (its ticket points to it).
// Get and Put write it: slots of items used on different Ps at once should
// not share a cache line.
type Slot struct {
	gets uint64 // Gets of the item; first, so that 32-bit platforms' atomic loads find it aligned
	// 16 bytes on 32-bit platforms too. (Not last: a struct that ends in a
	// zero-size field is padded, to 24 bytes on 64-bit platforms.)
	_ [(8 - unsafe.Sizeof(uintptr(0))%8) % 8]byte
	t *Ticket
}

// take stores the ticket of the item a Get takes and counts the Get: a
// plain add on the line the store writes (an atomic one under the race
// detector, for the statistics' loads).
func (s *Slot) take(t *Ticket) {
	if race.Enabled {
		s.store(t)
		atomic.AddUint64(&s.gets, 1)
		return
	}
	s.t = t
	s.gets++
}

// Gets returns how many Gets took the slot's item. It may be called while
// the item is taken and given back on other goroutines (for statistics):
// an atomic load, which sees a recent count.
func (s *Slot) Gets() uint64 { return atomic.LoadUint64(&s.gets) }

// Take empties the slot and returns its ticket, for Put, or nil if the
// item is idle: a second free. See [Idle] for two Takes at once.
func (s *Slot) Take() *Ticket {
	t := s.t
	if t != nil {
		s.store(nil)
	}
	return t
}

// Out reports whether the slot's item is out. It may be called while the
// item is taken or given back on other goroutines (for statistics): it
// reads the slot with an atomic load (a plain load on the platforms Go
// supports).
func (s *Slot) Out() bool {
	return atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&s.t))) != nil
}

// store writes the slot. Statistics read slots while Gets and Puts run; a
// word-sized store cannot tear, and they want only some recent value, so
// the store is plain but under the race detector, which would report it
// against their loads.
func (s *Slot) store(t *Ticket) {
	if race.Enabled {
		atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&s.t)), unsafe.Pointer(t))
		return
	}
	s.t = t
}
