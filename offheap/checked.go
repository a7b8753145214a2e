package offheap

import (
	"fmt"

	"github.com/memkit/memkit/internal/checked"
)

// The checked build (-tags memkitdebug). Everything in this file runs only
// under checked.Enabled, a constant, so a release build compiles the calls
// away. Each Allocator's tracker holds its live mappings, keyed by the
// start of the slice Alloc returned, with the length asked for and the
// stack of the Alloc. Freed mappings wait, poisoned, in the tracker's
// quarantine before they are unmapped (with guard pages: protected in the
// allocator's own quarantine), and overflow is what guard pages catch.

// pkgPath is this package's import path, for checked.SkipWithin: a
// recorded stack starts at the code that called into the package.
const pkgPath = "github.com/memkit/memkit/offheap"

func misuse(kind string, addr uintptr, rec *checked.Record, detail string) *checked.Misuse {
	return checked.Report("offheap", "Free", kind, addr, rec, detail)
}

// hold keeps the freed mapping m mapped, poisoned, in the tracker's
// quarantine instead of unmapping it at once, so that the kernel cannot
// hand its addresses to a new mapping yet: a second Free is then a double
// free naming both stacks, not the free of a new owner's memory, and a
// write after Free is reported when the mapping leaves the quarantine or by
// memkit.Leaks.
func (a *Allocator) hold(m mapping, rec *checked.Record) {
	a.tr.Hold("Free", rec, m.whole()[:m.size], func() { _ = sysFree(m.whole()) })
}

// badFreeChecked returns the report of a Free at start (of a slice of
// capacity c) that does not start a live mapping of a; m is the live
// mapping that holds start, if any (m.p == nil if none).
func (a *Allocator) badFreeChecked(start uintptr, c int, m mapping) *checked.Misuse {
	if m.p != nil {
		var rec *checked.Record
		if m.owner.tr != nil {
			rec = m.owner.tr.Lookup(m.user)
		}
		switch {
		case m.owner != a:
			return misuse(checked.ForeignFree, start, rec, "the mapping belongs to another Allocator")
		case m.user == start:
			return misuse(checked.ForeignFree, start, rec, fmt.Sprintf(
				"a slice of capacity %d names no byte of the mapping", c))
		case start > m.user:
			return misuse(checked.MovedFree, start, rec, fmt.Sprintf(
				"it starts at byte %d of the slice Alloc returned at %#x", start-m.user, m.user))
		default:
			return misuse(checked.MovedFree, start, rec, fmt.Sprintf(
				"it starts %d bytes before the slice Alloc returned at %#x", m.user-start, m.user))
		}
	}
	if prev := a.tr.Freed(start); prev != nil {
		return misuse(checked.DoubleFree, start, prev, "")
	}
	if prev := a.tr.FreedContaining(start); prev != nil {
		return misuse(checked.DoubleFree, start, prev, fmt.Sprintf(
			"inside the mapping freed at %#x", prev.Addr))
	}
	return misuse(checked.ForeignFree, start, nil, "")
}
