package checked

import (
	"fmt"
	"strings"
)

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

// Report returns the misuse of kind made by op at addr, with the size and
// stacks of rec when rec is not nil.
func Report(allocator, op, kind string, addr uintptr, rec *Record, detail string) *Misuse {
	m := &Misuse{Allocator: allocator, Op: op, Kind: kind, Addr: addr, Detail: detail}
	if rec != nil {
		m.Size, m.Alloc, m.Free = rec.Size, rec.Alloc, rec.Free
	}
	return m
}

// Report is [Report] for the tracker's allocator.
func (t *Tracker) Report(op, kind string, addr uintptr, rec *Record, detail string) *Misuse {
	return Report(t.allocator, op, kind, addr, rec, detail)
}
