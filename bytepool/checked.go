package bytepool

import (
	"fmt"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// The checked build (-tags memkitdebug). Everything in this file runs only
// under checked.Enabled, a constant, so a release build compiles the calls
// away. The invariants it keeps:
//
//   - every buffer handed out is in the pool's tracker, keyed by the address
//     of its first byte, with the length Get was asked for and the stack of
//     the Get;
//   - every idle buffer (in a sync.Pool, a Cache, or carved and not
//     yet handed out) is all poison, checked when it is handed out again;
//   - the slack of a live buffer, from the length Get gave to the capacity,
//     is guard bytes (zeros in a zeroing pool), checked on Put.

// pkgPath is this package's import path, for checked.SkipWithin.
const pkgPath = "github.com/memkit/memkit/bytepool"

// base returns the address of b's first byte (of its capacity).
func base(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)]))) }

// capOf returns the capacity Get(n) hands out.
func (p *Pool) capOf(n int) int {
	if n > p.maxSize {
		return n
	}
	return p.sizes[p.class(n)]
}

// guardByte is what fills the slack of a live buffer: zero in a zeroing
// pool, whose buffers are zero to the capacity, else checked.GuardByte.
func (p *Pool) guardByte() byte {
	if p.zeroed {
		return 0
	}
	return checked.GuardByte
}

// verifyPoison checks that b, an idle buffer about to be handed out, is
// still all poison: a byte that is not was written after its Put.
func (p *Pool) verifyPoison(b []byte) {
	i := checked.IndexNot(b, checked.PoisonByte)
	if i < 0 {
		return
	}
	addr := base(b)
	panic(p.track.Report("Get", checked.UseAfterFree, addr, p.track.Freed(addr), fmt.Sprintf(
		"byte %d of the %d-byte buffer is %#x, not the poison %#x: written after its Put",
		i, len(b), b[i], checked.PoisonByte)))
}

// trackOut records b (at its full capacity), handed out for a request of n
// bytes, and fills its slack with guard bytes.
func (p *Pool) trackOut(b []byte, n int) {
	if g := p.guardByte(); g != 0 {
		checked.Fill(b[n:], g)
	}
	p.track.Alloc(base(b), n, checked.SkipWithin(pkgPath))
}

// checkPut checks a Put of b against the tracker and returns its record: it panics
// with a *checked.Misuse for a buffer put twice, one the pool never handed
// out, one whose start or capacity moved, or one whose slack was written.
// The slack that must still hold guard bytes starts at the length Get gave
// or at len(b), whichever is larger, so a buffer that grew by append within
// its capacity is put back whole.
func (p *Pool) checkPut(b []byte) *checked.Record {
	size := cap(b)
	full := b[:size]
	addr := base(b)
	rec := p.track.Lookup(addr)
	if rec == nil {
		p.badPut(addr, size)
	}
	if want := p.capOf(rec.Size); size != want {
		panic(p.track.Report("Put", checked.MovedFree, addr, rec, fmt.Sprintf(
			"its capacity is %d, but Get handed it out with %d", size, want)))
	}
	from := max(rec.Size, len(b))
	if i := checked.IndexNot(full[from:], p.guardByte()); i >= 0 {
		panic(p.track.Report("Put", checked.Overflow, addr, rec, fmt.Sprintf(
			"byte %d of the %d-byte buffer, past the length %d, is %#x, not the guard byte %#x",
			from+i, size, from, full[from+i], p.guardByte())))
	}
	return p.track.Free("Put", addr, checked.SkipWithin(pkgPath))
}

// badPut panics with the report of a Put of the buffer at addr, of
// capacity size, which the tracker does not list as live: a second Put, a
// re-sliced buffer whose start moved, or memory the pool never handed out.
//
// A buffer put back and later dropped to the GC leaves its record behind,
// and the GC may give its memory to anything: a record of the same address
// means a second Put only if the capacity is the one Get handed out.
// (While the caller holds the slice of a second Put, the memory cannot
// have been reused.)
func (p *Pool) badPut(addr uintptr, size int) {
	if prev := p.track.Freed(addr); prev != nil && p.capOf(prev.Size) == size {
		panic(p.track.Report("Put", checked.DoubleFree, addr, prev, ""))
	}
	for _, r := range p.track.Live() {
		if addr > r.Addr && addr-r.Addr < uintptr(p.capOf(r.Size)) {
			panic(p.track.Report("Put", checked.MovedFree, addr, &r, fmt.Sprintf(
				"it starts at byte %d of the buffer Get handed out at %#x", addr-r.Addr, r.Addr)))
		}
	}
	panic(p.track.Report("Put", checked.ForeignFree, addr, nil, ""))
}

// hold keeps the buffer at ptr, of size bytes, just put, out of reuse in
// the tracker's quarantine: a second Put, or a write, while it waits is
// reported with the stacks of its Get and first Put. Its Put is counted
// now; release, the engine's, files it when it leaves the quarantine, and
// holds the engine's class, not the pool, so that a quarantine does not
// keep an unreachable Elastic pool alive.
func (p *Pool) hold(rec *checked.Record, ptr unsafe.Pointer, size int, release func()) {
	p.track.Hold("Put", rec, unsafe.Slice((*byte)(ptr), size), release)
}

// flushQuarantine releases every buffer the checked build holds back, for
// a Get that would otherwise fail or fall back to the heap. It reports
// whether there was any.
func (p *Pool) flushQuarantine() bool {
	if n, _ := p.track.Held(); n == 0 {
		return false
	}
	p.track.Flush("Get")
	return true
}
