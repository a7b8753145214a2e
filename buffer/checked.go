package buffer

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
)

// The checked build (-tags memkitdebug). Everything in this file runs only
// under checked.Enabled, a constant, so a release build compiles the calls
// away. A Pool and a FixedPool each keep a tracker of the Buffer headers
// they handed out, keyed by the header's address (headers are never reused
// in this build, so a stale *Buffer stays recognisably dead); a FixedPool
// also poisons a buffer's storage at Close and checks it at the next
// Checkout, and keeps guard bytes after each buffer, checked at Close.

// pkgPath is this package's import path, for checked.SkipWithin.
const pkgPath = "github.com/memkit/memkit/buffer"

// msgStale is the detail of the report of a use of a freed Buffer.
const msgStale = "use of a Buffer after Free or Close"

// addr is the address the trackers know b by.
func (b *Buffer) addr() uintptr { return uintptr(unsafe.Pointer(b)) }

// tracked reports whether b came from Get or Checkout, and so is tracked;
// a zero-value Buffer is not.
func (b *Buffer) tracked() bool { return b.hdr || b.fp != nil }

// tracker returns the tracker of the pool b came from.
func (b *Buffer) tracker() *checked.Tracker {
	if b.fp != nil {
		return b.fp.track
	}
	return b.pool.track
}

// misuse returns a report about b, with the stacks of rec if not nil.
func (b *Buffer) misuse(op, kind string, rec *checked.Record, detail string) *checked.Misuse {
	return checked.Report("buffer", op, kind, b.addr(), rec, detail)
}

// stale panics for a use of b after its Free or Close.
func (b *Buffer) stale(op string) {
	var rec *checked.Record
	if b.tracked() {
		rec = b.tracker().Freed(b.addr())
	}
	panic(b.misuse(op, checked.StaleHandle, rec, msgStale))
}

// checkFree runs before the Free or Close of b, a tracked Buffer. It panics
// for a Buffer its pool did not hand out — a copy of a Buffer — and, for a
// FixedPool buffer, for a write into the guard bytes past its storage. A
// second Free or Close passes: the caller reports it as the release build
// does (ErrClosed), or with doubleFree.
func (b *Buffer) checkFree(op string) {
	t := b.tracker()
	rec := t.Lookup(b.addr())
	if rec == nil {
		if atomic.LoadUint32(&b.state) == stFree {
			return
		}
		panic(b.misuse(op, checked.ForeignFree, nil, "a copy of a Buffer, or one its pool did not hand out"))
	}
	if b.fp != nil && b.index >= 0 {
		p := b.fp
		off := int(b.index)*(p.size+guardLen) + p.size
		gap := p.mem[off : off+guardLen]
		if i := checked.IndexNot(gap, checked.GuardByte); i >= 0 {
			panic(b.misuse(op, checked.Overflow, rec, fmt.Sprintf(
				"byte %d past the end of the %d-byte buffer is %#x, not the guard byte %#x",
				i, p.size, gap[i], checked.GuardByte)))
		}
	}
}

// doubleFree panics for a second Free of b.
func (b *Buffer) doubleFree(op string) {
	panic(b.misuse(op, checked.DoubleFree, b.tracker().Freed(b.addr()), ""))
}

// untrack records the Free or Close of b and returns its record. b stays
// reachable until the tracker has forgotten its address: were it collected
// before, the GC could give the address to a new header whose Alloc the
// tracker would then take for b's (a false "double free" at that header's
// Close).
func (b *Buffer) untrack(op string) *checked.Record {
	t, addr := b.tracker(), b.addr()
	if testHookUntrack != nil {
		testHookUntrack() // a test's GC and Checkout, as another goroutine's
	}
	rec := t.Free(op, addr, checked.SkipWithin(pkgPath))
	runtime.KeepAlive(b)
	return rec
}

// testHookUntrack, set by tests only, runs in untrack after the last read
// of the header and before the tracker forgets its address: the window in
// which the header must stay reachable (issue 13, case 5).
var testHookUntrack func()

// hold puts b, a FixedPool buffer closed by op, in the pool's
// quarantine: poisoned, and back on the free list only once the tracker
// lets it go (checking the poison then).
func (p *FixedPool) hold(b *Buffer, op string) {
	rec := b.untrack(op)
	i := b.index
	p.track.Hold(op, rec, p.entryMem(i), func() { p.push(i) })
}

// entryMem is buffer i's memory in the checked build's layout.
func (p *FixedPool) entryMem(i int32) []byte {
	off := int(i) * (p.size + guardLen)
	return p.mem[off : off+p.size : off+p.size]
}

// poisonAll fills every buffer of a new FixedPool with poison and every
// gap after one with guard bytes.
func (p *FixedPool) poisonAll() {
	stride := p.size + guardLen
	for i := range p.entries {
		off := i * stride
		checked.Fill(p.mem[off:off+p.size], checked.PoisonByte)
		checked.Fill(p.mem[off+p.size:off+stride], checked.GuardByte)
	}
}

// takeChecked is take in the checked build: a header of its own for every
// checkout, and the poison checked before the buffer is handed out.
func (p *FixedPool) takeChecked(i int) *Buffer {
	sl := &p.entries[i]
	b := &Buffer{pool: p.pool, fp: p, index: int32(i)}
	p.dbgMu.Lock()
	prev := sl.dbg
	sl.dbg = b
	sl.out = true
	p.dbgMu.Unlock()
	mem := p.entryMem(int32(i))
	if k := checked.IndexNot(mem, checked.PoisonByte); k >= 0 {
		var rec *checked.Record
		if prev != nil {
			rec = p.track.Freed(prev.addr())
		}
		m := p.track.Report("Checkout", checked.UseAfterFree, uintptr(unsafe.Pointer(unsafe.SliceData(mem))), rec,
			fmt.Sprintf("byte %d of the %d-byte buffer is %#x, not the poison %#x: written after its Close",
				k, p.size, mem[k], checked.PoisonByte))
		m.Size = p.size
		panic(m)
	}
	b.buf = mem[:0]
	p.track.Alloc(b.addr(), p.size, checked.SkipWithin(pkgPath))
	return b
}

// closeChecked is close of a reserved buffer in the checked build: under
// dbgMu, so that of two Closes of one header exactly one succeeds, the
// buffer stops being out; then it waits in the quarantine.
func (p *FixedPool) closeChecked(b *Buffer, op string) error {
	sl := &p.entries[b.index]
	p.dbgMu.Lock()
	if !sl.isOut(b) {
		p.dbgMu.Unlock()
		p.badCloses.Add(1)
		return ErrClosed
	}
	sl.out = false
	b.state = stFree
	grown, owned := b.buf, b.owned
	b.buf, b.off, b.owned = nil, 0, false
	p.held.Add(1)
	p.dbgMu.Unlock()
	p.hold(b, op)
	if owned {
		p.pool.bp.Put(grown)
		if p.budget != nil {
			p.budget.Release(int64(cap(grown)))
		}
	}
	return nil
}

// chargeGrowth charges the budget for b's move to storage of newCap bytes
// and reports whether the budget allowed it. A Buffer of the pool is
// charged for the storage it holds beyond its reserved buffer: nothing for
// a reserved buffer, the pool's size for a miss, or the bytepool storage it
// expanded into.
func (p *FixedPool) chargeGrowth(b *Buffer, newCap int) bool {
	old := 0
	if b.owned {
		old = cap(b.buf)
	} else if b.index < 0 {
		old = p.size
	}
	return p.budget.TryCharge(int64(newCap - old))
}

// checkOwned panics unless b is a buffer bytepool.Default handed out and
// has not had back, with its start and capacity as Get gave them: what
// Slice.PushOwned takes ownership of.
func checkOwned(b []byte) {
	bp := bytepool.Default()
	t := checked.TrackerOf(bp)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)])))
	report := func(kind string, rec *checked.Record, detail string) *checked.Misuse {
		return checked.Report("buffer", "PushOwned", kind, addr, rec, detail)
	}
	if r := t.Lookup(addr); r != nil {
		if cap(b) == bp.ClassSize(r.Size) {
			return
		}
		panic(report(checked.MovedFree, r, fmt.Sprintf("its capacity is %d, but bytepool.Get handed it out with %d", cap(b), bp.ClassSize(r.Size))))
	}
	if r := t.Freed(addr); r != nil && cap(b) == bp.ClassSize(r.Size) {
		panic(report(checked.DoubleFree, r, "the buffer was put back to bytepool already"))
	}
	for _, r := range t.Live() {
		if addr > r.Addr && addr-r.Addr < uintptr(bp.ClassSize(r.Size)) {
			panic(report(checked.MovedFree, &r, fmt.Sprintf("it starts at byte %d of the buffer bytepool.Get handed out at %#x", addr-r.Addr, r.Addr)))
		}
	}
	panic(report(checked.ForeignFree, nil, "not a buffer of bytepool.Default"))
}
