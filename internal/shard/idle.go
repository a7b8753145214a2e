package shard

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/memkit/memkit/internal/race"
)

// Idle is the set of idle items of an owner that numbers its items 0 to
// n-1 (a FixedPool's buffers), kept so that taking an item and giving it
// back take no locked instruction: each item has a ticket, a 16-byte heap
// object, which sits in a sync.Pool (per P, no atomic on its own P's list)
// while the item is idle and in a table slot of the item's while it is out.
//
// A sync.Pool drops what it holds across two GCs (and, under the race
// detector, a quarter of what it is given at once). A dropped ticket is
// unreachable, and a cleanup (runtime.AddCleanup) then puts its item on a
// locked list that Get takes from when the sync.Pool is empty: no item is
// lost, an item idle across two GCs costs a ticket made again (one
// allocation), and the owner may miss an item until the GC that frees its
// ticket has run. The slot keeps an out item's ticket reachable, so a
// cleanup never recovers an item that is out.
//
// Under the race detector, where a sync.Pool drops a quarter of what it is
// given at random, the idle tickets wait on a locked stack instead, so that
// an owner's reuse of its items is the release build's.
//
// Get and Put are safe for concurrent use. Put of an idle item reports
// false, an O(1) check of the item's slot; two Puts of one out item made at
// the same instant by two goroutines may both pass it (the window is
// between the slot's load and its store, a few instructions), and the item
// is then handed out twice: the callers' own double-free check is the
// only guard there.
//
// Counts: the Gets are counted per ticket and added to a shared counter
// exactly for a ticket's first 64 Gets, then once every 64, so that a warm
// Get takes no locked instruction; [Idle.Gets] is low by at most 63 per
// ticket (in use or dropped). [Idle.Out] is exact when no Get or Put is
// running.
type Idle struct {
	pool sync.Pool // *ticket
	out  []*ticket // per item: its ticket while it is out, else nil
	gets atomic.Uint64

	// locked: the race detector's build keeps idle tickets on stash, under
	// mu, not in the sync.Pool, which there drops a quarter of what it is
	// given at random: the owner's reuse stays what the release build's
	// is, the GC and the cleanups aside.
	locked bool
	stash  []*ticket

	mu        sync.Mutex
	spare     []int32 // idle items whose ticket is not in the pool: never made, or collected
	made      atomic.Uint64
	recovered atomic.Uint64

	self weak.Pointer[Idle] // the cleanups' way back, which does not keep the Idle alive
}

// ticket stands for one idle item. It is 16 bytes, so that it is an object
// of its own (the runtime packs smaller pointer-free objects together,
// which would delay its cleanup until its neighbours die too).
type ticket struct {
	item    int32
	_       int32
	uses    uint32 // Gets of this ticket
	flushed uint32 // of them, those added to Idle.gets
}

// exactUses and flushEvery set how a ticket's Gets reach Idle.gets: every
// one of the first exactUses, then flushEvery at a time.
const (
	exactUses  = 64
	flushEvery = 64
)

// NewIdle returns the idle set of n items, all idle.
func NewIdle(n int) *Idle {
	return newIdle(n, race.Enabled)
}

// newIdle is NewIdle, keeping idle tickets on a locked stack if locked.
func newIdle(n int, locked bool) *Idle {
	x := &Idle{out: make([]*ticket, n), spare: make([]int32, n), locked: locked}
	for i := range x.spare {
		x.spare[i] = int32(n - 1 - i) // taken from the end: item 0 first
	}
	x.self = weak.Make(x)
	return x
}

// Len returns the number of items.
func (x *Idle) Len() int { return len(x.out) }

// Get takes an idle item and returns it, or reports false when none is
// idle. Warm, it is a sync.Pool Get, a store into the item's slot and a
// counter of the ticket's: no locked instruction (one in 64 Gets adds to
// the shared count).
func (x *Idle) Get() (int, bool) {
	if race.Enabled && x.locked {
		return x.getSlow()
	}
	t, _ := x.pool.Get().(*ticket)
	if t == nil {
		return x.getSlow()
	}
	x.setOut(int(t.item), t)
	t.uses++
	if t.uses <= exactUses || t.uses%flushEvery == 0 {
		x.flush(t)
	}
	return int(t.item), true
}

// flush adds t's Gets not yet counted to the shared count.
func (x *Idle) flush(t *ticket) {
	x.gets.Add(uint64(t.uses - t.flushed))
	t.flushed = t.uses
}

// getSlow is Get when the sync.Pool is empty: an item from the spare list,
// with a ticket made for it (or, locked, the ticket last stashed).
func (x *Idle) getSlow() (int, bool) {
	x.mu.Lock()
	if k := len(x.stash) - 1; k >= 0 {
		t := x.stash[k]
		x.stash[k] = nil
		x.stash = x.stash[:k]
		x.mu.Unlock()
		t.uses++
		x.flush(t)
		x.setOut(int(t.item), t)
		return int(t.item), true
	}
	k := len(x.spare) - 1
	if k < 0 {
		x.mu.Unlock()
		return -1, false
	}
	i := x.spare[k]
	x.spare = x.spare[:k]
	x.mu.Unlock()
	t := &ticket{item: i, uses: 1}
	runtime.AddCleanup(t, recoverItem, cleanupArg{x.self, i})
	x.made.Add(1)
	x.flush(t)
	x.setOut(int(i), t)
	return int(i), true
}

// cleanupArg is what the cleanup of item i's ticket needs: not the ticket,
// and not a strong pointer to the Idle (which would keep it alive).
type cleanupArg struct {
	x    weak.Pointer[Idle]
	item int32
}

// recoverItem runs once a ticket is unreachable: the sync.Pool dropped it
// while its item was idle. It puts the item on the spare list.
func recoverItem(a cleanupArg) {
	x := a.x.Value()
	if x == nil {
		return
	}
	x.mu.Lock()
	x.spare = append(x.spare, a.item)
	x.mu.Unlock()
	x.recovered.Add(1)
}

// Put gives item i, which Get returned, back, and reports whether it was
// out: false, changing nothing, for an item already idle. i must be
// between 0 and Len()-1.
func (x *Idle) Put(i int) bool {
	t := x.out[i]
	if t == nil {
		return false
	}
	x.setOut(i, nil)
	if race.Enabled && x.locked {
		x.mu.Lock()
		x.stash = append(x.stash, t)
		x.mu.Unlock()
		return true
	}
	x.pool.Put(t)
	return true
}

// IsOut reports whether item i is out.
func (x *Idle) IsOut(i int) bool { return x.load(i) != nil }

// setOut stores t in item i's slot. The slots are read by Out while Gets
// and Puts run; a word-sized store cannot tear, and Out wants only some
// recent value, so the store is plain but under the race detector, which
// would report the plain store against Out's loads.
func (x *Idle) setOut(i int, t *ticket) {
	if race.Enabled {
		atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&x.out[i])), unsafe.Pointer(t))
		return
	}
	x.out[i] = t
}

// load reads item i's slot with an atomic load (a plain load on the
// platforms Go supports).
func (x *Idle) load(i int) *ticket {
	return (*ticket)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&x.out[i]))))
}

// Out counts the items out, by a load of each slot: exact when no Get or
// Put runs meanwhile, else one of the values the count took while it ran.
func (x *Idle) Out() int {
	n := 0
	for i := range x.out {
		if x.load(i) != nil {
			n++
		}
	}
	return n
}

// Gets returns the Gets counted so far: low by at most 63 per ticket made
// (see [Idle]).
func (x *Idle) Gets() uint64 { return x.gets.Load() }

// Made returns how many tickets were made: the first Get of each item, and
// one per item recovered since.
func (x *Idle) Made() uint64 { return x.made.Load() }

// Recovered returns how many items a cleanup put back on the spare list
// after the sync.Pool dropped their tickets.
func (x *Idle) Recovered() uint64 { return x.recovered.Load() }
