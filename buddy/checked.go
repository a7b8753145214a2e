package buddy

import (
	"fmt"

	"github.com/memkit/memkit/internal/checked"
)

// The checked build (-tags memkitdebug). Everything in this file runs only
// under checked.Enabled, a constant, so a release build compiles the calls
// away. The invariants it keeps:
//
//   - every block handed out is in the tracker, keyed by its start, with
//     the length Alloc was asked for and the stack of the Alloc;
//   - every byte of the region not in a block handed out is poison,
//     checked when a block is handed out again;
//   - the slack of a live block, from the length Alloc gave to the block's
//     end, is guard bytes, checked on Free;
//   - a freed block waits in the tracker's quarantine (checked.Tracker.Hold),
//     its state still that of a block handed out but with no live record,
//     until more than checked.QuarantineBytes or QuarantineBlocks wait
//     after it (or an Alloc would fail without it, or Close): a second Free
//     of it is a double free at that call, with the stacks of its
//     allocation and first free, and a write into it is reported when it
//     leaves the quarantine or at memkit.Leaks, whichever comes first.

// pkgPath is this package's import path, for checked.SkipWithin: a
// recorded stack starts at the code that called into the package.
const pkgPath = "github.com/memkit/memkit/buddy"

func misuse(op, kind string, addr uintptr, rec *checked.Record, detail string) *checked.Misuse {
	return checked.Report("buddy", op, kind, addr, rec, detail)
}

// blockAt returns the block of the region (a slice of it, to its full
// size) that starts at p.
func (a *Allocator) blockAt(p uintptr, size int) []byte {
	off := int(p - a.base)
	return a.mem[off : off+size : off+size]
}

// checkOut checks b, a block about to be handed out for a request of n
// bytes, for writes since it was freed, fills its slack with guard bytes
// and records it.
func (a *Allocator) checkOut(b []byte, n int) {
	full := b[:cap(b)]
	p := blockAddr(b)
	if i := checked.IndexNot(full, checked.PoisonByte); i >= 0 {
		q := p + uintptr(i)
		rec := a.lastOwner(q)
		addr, off := q, 0
		if rec != nil {
			addr, off = rec.Addr, int(q-rec.Addr)
		}
		panic(misuse("Alloc", checked.UseAfterFree, addr, rec, fmt.Sprintf(
			"byte %d of the freed block is %#x, not the poison %#x: written after it was freed",
			off, full[i], checked.PoisonByte)))
	}
	checked.Fill(full[n:], checked.GuardByte)
	a.tr.Alloc(p, n, checked.SkipWithin(pkgPath))
}

// lastOwner returns the freed record of the smallest block that held the
// byte at q when it was freed, or nil.
func (a *Allocator) lastOwner(q uintptr) *checked.Record {
	i := int32((q - a.base) >> a.minShift)
	for k := 0; k <= a.top; k++ {
		h := a.base + uintptr(i&^(1<<uint(k)-1))<<a.minShift
		if r := a.tr.Freed(h); r != nil && q-h < uintptr(a.BlockSize(r.Size)) {
			return r
		}
	}
	return nil
}

// checkFree checks a Free of b before the release build's checks run: it
// panics with a *checked.Misuse for a block freed twice, one whose start
// or capacity moved, memory the allocator did not hand out, or a block
// whose slack was written, and otherwise records the free and poisons the
// block. The slack that must still hold guard bytes starts at the length
// Alloc gave or at len(b), whichever is larger, so a block grown by append
// within its capacity is freed whole.
func (a *Allocator) checkFree(b []byte) {
	p := blockAddr(b)
	rec := a.tr.Lookup(p)
	if rec == nil {
		a.countBadFree()
		panic(a.badFreeChecked(p))
	}
	size := a.BlockSize(rec.Size)
	if cap(b) > size {
		a.countBadFree()
		panic(misuse("Free", checked.MovedFree, p, rec, fmt.Sprintf(
			"its capacity is %d, larger than its block of %d", cap(b), size)))
	}
	blk := a.blockAt(p, size)
	from := max(rec.Size, len(b))
	if i := checked.IndexNot(blk[from:], checked.GuardByte); i >= 0 {
		a.countBadFree()
		panic(misuse("Free", checked.Overflow, p, rec, fmt.Sprintf(
			"byte %d of the %d-byte block, past the length %d, is %#x, not the guard byte %#x",
			from+i, size, from, blk[from+i], checked.GuardByte)))
	}
	a.tr.Free("Free", p, checked.SkipWithin(pkgPath))
	checked.Fill(blk, checked.PoisonByte)
}

// freeChecked is Free in the checked build: the checks of checkFree, the
// counts of a Free, and the block held back from reuse in the quarantine
// rather than given back.
func (a *Allocator) freeChecked(b []byte) {
	a.checkFree(b)
	p := blockAddr(b)
	i := int32((p - a.base) >> a.minShift)
	k := int(a.state[i] & orderMask)
	o := &a.orders[k]
	o.frees++
	if o.frees%checkEvery == 0 {
		a.maybePublish(k, o.frees)
	}
	a.alertFree(k)
	size := a.minBlock << uint(k)
	a.tr.Hold("Free", a.tr.Freed(p), a.blockAt(p, size), func() { a.put(i, k) })
}

// releaseHeld gives back every block of the quarantine, checking each for
// writes since its free, and reports whether there was any.
func (a *Allocator) releaseHeld() bool {
	if n, _ := a.tr.Held(); n == 0 {
		return false
	}
	a.tr.Flush("Alloc")
	a.coalesce()
	return true
}

// badFreeChecked returns the report of a Free at p, which does not start a
// live block. A p inside a live block is reported as a moved start, even
// if a block freed earlier started at p (its stale slice freed twice would
// look the same): the live block is what the Free would corrupt.
func (a *Allocator) badFreeChecked(p uintptr) *checked.Misuse {
	prev := a.tr.Freed(p)
	if a.closed {
		return misuse("Free", checked.ForeignFree, p, nil, "the allocator is closed")
	}
	off := p - a.base
	if off >= uintptr(a.size) {
		return misuse("Free", checked.ForeignFree, p, nil, "outside the region")
	}
	// Find the block that holds p, as badFree does.
	i := int32(off >> a.minShift)
	for k := 0; k <= a.top; k++ {
		h := i &^ (1<<uint(k) - 1)
		st := a.state[h]
		if st == 0 || int(st&orderMask) < k {
			continue
		}
		if st&free != 0 {
			if prev == nil {
				prev = a.lastOwner(p)
			}
			return misuse("Free", checked.DoubleFree, p, prev, "")
		}
		if h == i && prev != nil {
			// The head of a block handed out with no live record: freed,
			// and waiting in the quarantine.
			return misuse("Free", checked.DoubleFree, p, prev, "the block waits in the quarantine")
		}
		head := a.base + uintptr(h)<<a.minShift
		if a.tr.Lookup(head) == nil {
			// The block holding p was freed and waits in the quarantine:
			// p is a slice of memory freed before, freed again.
			if prev == nil {
				prev = a.tr.Freed(head)
			}
			return misuse("Free", checked.DoubleFree, p, prev, "the block holding it waits in the quarantine")
		}
		detail := fmt.Sprintf("it starts at byte %d of the block handed out at %#x", p-head, head)
		if prev != nil {
			detail += "; a block freed earlier started here: if this is its slice, it is a double free"
		}
		return misuse("Free", checked.MovedFree, p, a.tr.Lookup(head), detail)
	}
	return misuse("Free", checked.ForeignFree, p, nil, "")
}
