package extent

import (
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/sysmem"
)

// Borrow returns n bytes of scratch memory, valid until the next
// [Allocator.Recycle]: it must not be freed, and must not be used after
// Recycle. It is a bounds check and an add, with no per-call bookkeeping,
// bumping through chunks of BorrowChunk bytes (a larger request gets a chunk
// of its own). The memory is not zeroed. Borrow panics with
// "memkit/extent: negative size" if n < 0, and as Malloc does when the
// system cannot provide n bytes ("memkit/extent: Borrow of n bytes: ...").
func (a *Allocator) Borrow(n int) []byte {
	if checked.Enabled {
		return a.borrowChecked(n)
	}
	if b, ok := a.bump(n); ok {
		return b
	}
	return a.borrowSlow(n)
}

// bump takes n bytes from the current chunk, if they fit.
func (a *Allocator) bump(n int) ([]byte, bool) {
	off := a.bOff
	if uint(n) <= uint(len(a.bChunk)-off) {
		a.bOff = off + n
		return a.bChunk[off : off+n : off+n], true
	}
	return nil, false
}

// borrowSlow starts a new chunk with n bytes borrowed from it.
func (a *Allocator) borrowSlow(n int) []byte {
	if n < 0 {
		panic(errNegative)
	}
	if !sysmem.Available(uint64(n)) {
		a.refuse("Borrow", n, true)
	}
	if a.bChunk != nil {
		a.bOld = append(a.bOld, a.bChunk)
	}
	var c []byte
	if checked.Enabled {
		c = a.chunkChecked(max(n, a.cfg.borrowChunk))
	} else {
		c = a.Malloc(max(n, a.cfg.borrowChunk))
	}
	a.allocs-- // a chunk is no allocation of the caller's
	a.bChunk, a.bOff = c, n
	return c[:n:n]
}

// borrowChunks returns the chunks Borrow holds: the current one and those
// filled since the last Recycle.
func (a *Allocator) borrowChunks() [][]byte {
	out := append([][]byte(nil), a.bOld...)
	if a.bChunk != nil {
		out = append(out, a.bChunk)
	}
	return out
}

// Recycle ends every Borrow since the previous Recycle: their memory goes
// back to the allocator, but for the current chunk, which Borrow reuses
// from its start. Allocations from Malloc are not affected.
func (a *Allocator) Recycle() {
	if checked.Enabled {
		a.recycleChecked()
		return
	}
	for i, c := range a.bOld {
		a.Free(c)
		a.frees--
		a.bOld[i] = nil
	}
	a.bOld = a.bOld[:0]
	a.bOff = 0
}
