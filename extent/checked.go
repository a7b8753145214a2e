package extent

import (
	"fmt"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/sysmem"
)

// The checked build (-tags memkitdebug). Everything in this file runs only
// under checked.Enabled, a constant, so a release build compiles the calls
// away. The invariants it keeps:
//
//   - every byte of the blocks that is in a free range is poison, checked
//     when Malloc, TryMalloc or Borrow hands it out again;
//   - every allocation is followed by guardTail guard bytes, allocated with
//     it and checked by every Free of a part of it; they go back with the
//     free of the allocation's last byte;
//   - every live byte a caller may free is in a live segment: segments are
//     tracked both in the tracker (for Leaks, keyed by start) and in segs,
//     an index ordered by address that finds the segment holding a byte. A
//     partial free splits or shrinks the segments it touches;
//   - Borrow's chunks are not segments: Free of borrowed memory is a misuse;
//   - a freed range (with its guard bytes) waits in the tracker's quarantine
//     (checked.Tracker.Hold), neither live nor in the free ranges, until
//     more than checked.QuarantineBytes or QuarantineBlocks wait after it,
//     or a Malloc finds no fit without it, or Trim or Close: a second Free
//     of it is a double free at that call, with the stacks of its
//     allocation and first free, and a write into it is reported when it
//     leaves the quarantine, when it is handed out again, or at
//     memkit.Leaks, whichever comes first.

// guardTail is the bytes of guard after each allocation in the checked
// build.
const guardTail = 16

// debugState is an allocator's checked-build bookkeeping.
type debugState struct {
	tr   *checked.Tracker
	segs tree // live segments by start; node.blk unused
	// allocEnd maps a segment's start to the end of the allocation it is
	// part of (where its guard bytes start).
	allocEnd map[uintptr]uintptr
	// guarded holds the ends of allocations whose guard bytes are still
	// allocated.
	guarded map[uintptr]bool
	borrows []borrowRec // Borrows since the last Recycle
	pieces  []piece     // scratch for freeChecked
}

type borrowRec struct {
	addr  uintptr
	size  int
	stack checked.Stack
}

// piece is the part [from, to) of the live segment at seg that a Free
// covers.
type piece struct{ seg, from, to uintptr }

func newDebugState() *debugState {
	return &debugState{
		tr:       checked.NewTracker("extent"),
		segs:     newTree(),
		allocEnd: make(map[uintptr]uintptr),
		guarded:  make(map[uintptr]bool),
	}
}

// pkgPath is this package's import path, for checked.SkipWithin: a
// recorded stack starts at the code that called into the package.
const pkgPath = "github.com/memkit/memkit/extent"

func misuse(op, kind string, addr uintptr, rec *checked.Record, detail string) *checked.Misuse {
	return checked.Report("extent", op, kind, addr, rec, detail)
}

// verifyPoison checks that b, free memory about to be handed out by op, is
// still all poison.
func (d *debugState) verifyPoison(op string, b []byte) {
	i := checked.IndexNot(b, checked.PoisonByte)
	if i < 0 {
		return
	}
	p := sliceAddr(b) + uintptr(i)
	rec := d.tr.FreedContaining(p)
	addr, off := p, 0
	if rec != nil {
		addr, off = rec.Addr, int(p-rec.Addr)
	}
	panic(misuse(op, checked.UseAfterFree, addr, rec, fmt.Sprintf(
		"byte %d of the freed range is %#x, not the poison %#x: written after it was freed",
		off, b[i], checked.PoisonByte)))
}

// mallocChecked is Malloc (fallback) or TryMalloc in the checked build: n
// bytes plus guard bytes, checked for poison, tracked.
func (a *Allocator) mallocChecked(op string, n int, fallback bool) ([]byte, error) {
	if n <= 0 {
		return a.mallocEmpty(n), nil
	}
	if !sysmem.Available(uint64(n)) {
		a.refuse(op, n, fallback)
		return nil, tryMallocErr(n)
	}
	g := n + guardTail
	if g < n {
		g = n // no room for a guard: the request cannot be served anyway
	}
	if a.t.fit(uintptr(g)) == 0 {
		a.releaseHeld(op) // the quarantine's ranges may fit
	}
	b := a.fitOrGrow(g, fallback)
	if b == nil {
		return nil, tryMallocErr(g)
	}
	d := a.dbg
	d.verifyPoison(op, b)
	checked.Fill(b[n:], checked.GuardByte)
	p := sliceAddr(b)
	end := p + uintptr(n)
	d.segs.insert(p, end, 0)
	d.allocEnd[p] = end
	if g > n {
		d.guarded[end] = true
	}
	d.tr.Alloc(p, n, checked.SkipWithin(pkgPath))
	return b[:n:n], nil
}

// segAt returns the live segment holding p, or 0.
func (d *debugState) segAt(p uintptr) int32 {
	pred, _ := d.segs.around(p)
	if pred != 0 && d.segs.nodes[pred].end > p {
		return pred
	}
	return 0
}

// freeChecked is Free in the checked build. It checks that every byte of
// b is live memory the caller may free, or the guard bytes of an
// allocation whose last byte b frees too; verifies the guard bytes of every
// allocation b touches; poisons the freed range; and updates the segments.
func (a *Allocator) freeChecked(op string, b []byte) {
	d := a.dbg
	p := sliceAddr(b)
	e := p + uintptr(len(b))
	id := a.blockOf(p, e)
	if id < 0 {
		a.badFree()
		panic(d.badRange(a, op, p, e, p))
	}
	// Walk the segments [p, e) covers; end is where the freed range ends,
	// past the guard bytes of an allocation whose last byte it frees.
	d.pieces = d.pieces[:0]
	cur, end := p, e
	for cur < e {
		x := d.segAt(cur)
		if x == 0 {
			a.badFree()
			panic(d.badRange(a, op, p, e, cur))
		}
		s := d.segs.nodes[x]
		to := min(s.end, e)
		d.pieces = append(d.pieces, piece{s.start, cur, to})
		cur = to
		if to != s.end || to != d.allocEnd[s.start] || !d.guarded[to] {
			continue
		}
		// The free reaches the allocation's last byte: its guard bytes go
		// too, and a range that goes on must cover them.
		g := to + guardTail
		switch {
		case e == to:
			end = g
		case e < g:
			a.badFree()
			panic(misuse(op, checked.ForeignFree, p, d.tr.Lookup(s.start), fmt.Sprintf(
				"the range ends %d bytes into the guard bytes after the allocation ending at %#x", e-to, to)))
		default:
			cur = g
		}
	}
	// Guard bytes of every allocation touched.
	blk := &a.blocks[id]
	for _, pc := range d.pieces {
		ae := d.allocEnd[pc.seg]
		if !d.guarded[ae] {
			continue
		}
		guard := blk.mem[ae-blk.base:][:guardTail]
		if i := checked.IndexNot(guard, checked.GuardByte); i >= 0 {
			a.badFree()
			rec := d.tr.Lookup(pc.seg)
			panic(misuse(op, checked.Overflow, pc.seg, rec, fmt.Sprintf(
				"guard byte %d after the allocation ending at %#x is %#x, not %#x: written past the end",
				i, ae, guard[i], checked.GuardByte)))
		}
	}
	skip := checked.SkipWithin(pkgPath)
	var first *checked.Record
	for _, pc := range d.pieces {
		rec := d.tr.FreeRange(op, pc.seg, pc.from, pc.to, skip)
		if first == nil {
			first = rec
		}
		x := d.segs.find(pc.seg)
		segEnd := d.segs.nodes[x].end
		ae := d.allocEnd[pc.seg]
		d.segs.delete(x)
		delete(d.allocEnd, pc.seg)
		if pc.from > pc.seg {
			d.segs.insert(pc.seg, pc.from, 0)
			d.allocEnd[pc.seg] = ae
		}
		if pc.to < segEnd {
			d.segs.insert(pc.to, segEnd, 0)
			d.allocEnd[pc.to] = ae
		}
		if pc.to == ae {
			delete(d.guarded, ae)
		}
	}
	a.hot -= a.hot >> hotDecay
	a.freed()
	// Hold the range back from reuse; Hold poisons it. Its bytes count as
	// free in the stats meanwhile.
	a.free += uint64(end - p)
	d.tr.Hold(op, first, blk.mem[p-blk.base:end-blk.base], func() { a.merge(span{nil, p, end, id}) })
}

// releaseHeld gives back every range of the quarantine, checking each for
// writes since its free, and reports whether there was any.
func (a *Allocator) releaseHeld(op string) bool {
	if n, _ := a.dbg.tr.Held(); n == 0 {
		return false
	}
	a.dbg.tr.Flush(op)
	return true
}

// badRange returns the report of a Free by op of [p, e) whose byte at cur
// is not live memory the caller may free.
func (d *debugState) badRange(a *Allocator, op string, p, e, cur uintptr) *checked.Misuse {
	at := ""
	if cur > p {
		at = fmt.Sprintf(" (from byte %d of the %d freed)", cur-p, e-p)
	}
	if a.blockOf(cur, cur+1) < 0 {
		if rec := d.tr.FreedContaining(cur); rec != nil {
			return misuse(op, checked.DoubleFree, p, rec, "its block was given back since"+at)
		}
		return misuse(op, checked.ForeignFree, p, nil, "outside every block of the allocator"+at)
	}
	if pred, _ := a.t.around(cur); pred != 0 && a.t.nodes[pred].end > cur {
		return misuse(op, checked.DoubleFree, p, d.tr.FreedContaining(cur), "the range is already free"+at)
	}
	for k := uintptr(0); k < guardTail && k <= cur; k++ {
		ae := cur - k
		if d.guarded[ae] {
			return misuse(op, checked.ForeignFree, p, d.tr.LiveContaining(ae-1), fmt.Sprintf(
				"the range covers the guard bytes after an allocation ending at %#x, not its last byte%s", ae, at))
		}
	}
	for _, c := range a.borrowChunks() {
		if q := sliceAddr(c); q <= cur && cur < q+uintptr(len(c)) {
			return misuse(op, checked.ForeignFree, p, nil, "the memory is from Borrow, which Recycle gives back, not Free"+at)
		}
	}
	if rec := d.tr.FreedContaining(cur); rec != nil {
		// Neither live nor in the free ranges, but freed: the range waits
		// in the quarantine.
		return misuse(op, checked.DoubleFree, p, rec, "the range waits in the quarantine"+at)
	}
	return misuse(op, checked.ForeignFree, p, nil, "the memory was never handed out"+at)
}

// borrowChecked is Borrow in the checked build: the bytes must still be
// poison, and the Borrow is recorded so that a write after Recycle is
// reported with its stack.
func (a *Allocator) borrowChecked(n int) []byte {
	b, ok := a.bump(n)
	if !ok {
		b = a.borrowSlow(n)
	}
	if n > 0 {
		d := a.dbg
		d.verifyPoison("Borrow", b)
		d.borrows = append(d.borrows, borrowRec{sliceAddr(b), n, checked.Callers(checked.SkipWithin(pkgPath))})
	}
	return b
}

// chunkChecked takes a Borrow chunk of n bytes in the checked build: no
// guard and no segment, as Borrow memory is never freed by the caller.
func (a *Allocator) chunkChecked(n int) []byte {
	b := a.fitOrGrow(n, true)
	a.dbg.verifyPoison("Borrow", b)
	return b
}

// recycleChecked is Recycle in the checked build: the chunks go back
// poisoned, the current one is poisoned for reuse, and each Borrow since
// the last Recycle becomes a freed record.
func (a *Allocator) recycleChecked() {
	d := a.dbg
	skip := checked.SkipWithin(pkgPath)
	for _, r := range d.borrows {
		d.tr.Retire(r.addr, r.size, r.stack, skip)
	}
	clear(d.borrows)
	d.borrows = d.borrows[:0]
	for i, c := range a.bOld {
		checked.Fill(c, checked.PoisonByte)
		p := sliceAddr(c)
		a.freeRange(p, p+uintptr(len(c)), a.blockOf(p, p+uintptr(len(c))))
		a.bOld[i] = nil
	}
	a.bOld = a.bOld[:0]
	checked.Fill(a.bChunk, checked.PoisonByte)
	a.bOff = 0
}

// reset forgets every segment and record: Close gave everything back
// (after flushing the quarantine).
func (d *debugState) reset() {
	d.tr.Reset()
	d.segs = newTree()
	clear(d.allocEnd)
	clear(d.guarded)
	clear(d.borrows)
	d.borrows = d.borrows[:0]
}
