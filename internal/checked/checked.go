// Package checked is the machinery of memkit's checked build (-tags
// memkitdebug), shared by every allocator: call stacks recorded at
// allocation and free, a table of live and recently freed blocks that turns
// a double or foreign free into a report naming both stacks, poison and
// guard patterns, and the registry behind memkit.Leaks.
//
// Allocators guard every use with the constant [Enabled], so the release
// build compiles the calls away and pays nothing.
package checked

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Stack is a call stack captured without allocating.
type Stack struct {
	pcs [32]uintptr
	n   int
}

// Callers captures the caller's stack, skipping skip frames above the
// function that calls Callers (0: that function's caller).
func Callers(skip int) Stack {
	var s Stack
	s.n = runtime.Callers(skip+2, s.pcs[:])
	return s
}

// Empty reports whether no stack was captured.
func (s *Stack) Empty() bool { return s.n == 0 }

// String formats the stack as a panic trace does: function, then file:line.
func (s *Stack) String() string {
	if s.n == 0 {
		return "\t(unknown)\n"
	}
	var b strings.Builder
	frames := runtime.CallersFrames(s.pcs[:s.n])
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "\t%s\n\t\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			break
		}
	}
	return b.String()
}

// Kinds of misuse a checked build reports.
const (
	DoubleFree   = "double free"
	ForeignFree  = "free of memory this allocator did not hand out"
	MovedFree    = "free of a re-sliced buffer whose start moved"
	UseAfterFree = "write after free"
	Overflow     = "write past the end of an allocation"
	StaleHandle  = "stale handle"
)

// Misuse is the panic value of a checked build: what went wrong, where, and
// the stacks that explain it.
type Misuse struct {
	Allocator string  // "bytepool"
	Op        string  // "Put"
	Kind      string  // one of the kinds above
	Addr      uintptr // start of the memory concerned
	Size      int     // its size as allocated, when known
	Detail    string  // more about it: the offset of a bad byte, ...
	Alloc     Stack   // where the memory was allocated, if known
	Free      Stack   // where it was first freed, if it was
}

// Error formats the report: a first line like the release build's panics,
// then the stacks.
func (m *Misuse) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "memkit/%s: %s: %s at %#x", m.Allocator, m.Op, m.Kind, m.Addr)
	if m.Size > 0 {
		fmt.Fprintf(&b, " (%d bytes)", m.Size)
	}
	if m.Detail != "" {
		b.WriteString(": " + m.Detail)
	}
	b.WriteString("\n")
	if !m.Alloc.Empty() {
		b.WriteString("allocated at:\n" + m.Alloc.String())
	}
	if !m.Free.Empty() {
		b.WriteString("first freed at:\n" + m.Free.String())
	}
	return b.String()
}

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

// Poison and guard patterns. Freed memory is filled with PoisonByte and
// checked when handed out again; the slack after an allocation, between its
// length and the end of the memory that holds it (its class size), is
// filled with GuardByte and checked on free.
const (
	PoisonByte = 0xdb
	GuardByte  = 0xfd
)

// Fill sets every byte of b to v.
func Fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// FirstNot returns the index of the first byte of b that is not v, or -1.
func FirstNot(b []byte, v byte) int {
	for i, c := range b {
		if c != v {
			return i
		}
	}
	return -1
}
