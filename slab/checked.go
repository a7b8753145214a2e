package slab

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// The checked build (-tags memkitdebug). Every function here is called
// only under "if checked.Enabled", so the release build compiles the calls
// away.

// Quarantine bounds: a freed chunk waits until this many chunks, or this
// many bytes of chunks, were freed after it before it may be handed out
// again.
const (
	quarantineChunks = 256
	quarantineBytes  = 4 << 20
)

// arenaChecked is an Arena's checked-build state.
type arenaChecked struct {
	trk *checked.Tracker // shared by the shards of a Shared

	// The quarantine: freed chunks, oldest first, in a ring.
	quar   [quarantineChunks]qent
	qhead  int // oldest entry
	qlen   int
	qbytes int
}

// qent is a chunk in quarantine.
type qent struct {
	s *slab
	i int32
}

// chunkAddr returns the address of chunk i of s.
func chunkAddr(s *slab, i int32) uintptr { return s.base + uintptr(i)*uintptr(s.size) }

// chunkMem returns all the memory of chunk i of s, its class size.
func chunkMem(s *slab, i int32) []byte {
	return unsafe.Slice((*byte)(s.chunkPtr(i)), s.size)
}

// checkAlloc checks the chunk alloc is about to hand out of s for a
// request of n bytes: it must still hold the poison its free left (or grow
// put there). It then fills the slack after n bytes with guard bytes and
// records the allocation.
func (a *Arena) checkAlloc(s *slab, n int) {
	i := s.freeHead
	if i < 0 {
		i = s.fresh
	}
	mem := chunkMem(s, i)
	p := chunkAddr(s, i)
	if k := checked.IndexNot(mem, checked.PoisonByte); k >= 0 {
		checked.Fill(mem, checked.PoisonByte) // the arena stays usable
		m := &checked.Misuse{Allocator: "slab", Op: "Alloc", Kind: checked.UseAfterFree, Addr: p,
			Detail: fmt.Sprintf("byte %d of the %d-byte chunk changed after its last DecRef", k, s.size)}
		withStacks(m, a.chk.trk.Freed(p), true)
		panic(m)
	}
	checked.Fill(mem[n:], checked.GuardByte)
	// Skip alloc and Alloc: the stack starts at their caller.
	a.chk.trk.Alloc(p, n, 2)
}

// checkFree frees chunk i of s, whose last reference just went, in the
// checked build: it records the free, checks the guard bytes after the
// allocation, poisons the chunk and puts it in quarantine instead of on
// the free list. It panics with an Overflow after all that if a guard byte
// changed.
func (a *Arena) checkFree(s *slab, i int32) {
	p := chunkAddr(s, i)
	r := a.chk.trk.Free("DecRef", p, 3) // live: this does not panic
	mem := chunkMem(s, i)
	bad := checked.IndexNot(mem[r.Size:], checked.GuardByte)
	checked.Fill(mem, checked.PoisonByte)
	a.quarantine(s, i)
	if bad >= 0 {
		m := &checked.Misuse{Allocator: "slab", Op: "DecRef", Kind: checked.Overflow, Addr: p,
			Detail: fmt.Sprintf("byte %d past the end of the allocation (chunk of %d bytes) was written", bad, s.size)}
		withStacks(m, r, false)
		panic(m)
	}
}

// quarantine holds chunk i of s back from reuse, and hands the oldest
// chunks of the quarantine to their free lists while it is over its
// bounds.
func (a *Arena) quarantine(s *slab, i int32) {
	q := a.chk
	if q.qlen == quarantineChunks {
		a.evict()
	}
	q.quar[(q.qhead+q.qlen)%quarantineChunks] = qent{s, i}
	q.qlen++
	q.qbytes += int(s.size)
	for q.qlen > 0 && q.qbytes > quarantineBytes {
		a.evict()
	}
}

// evict puts the oldest chunk in quarantine on its slab's free list, as a
// release build's DecRef does at once.
func (a *Arena) evict() {
	q := a.chk
	e := q.quar[q.qhead]
	q.quar[q.qhead] = qent{}
	q.qhead = (q.qhead + 1) % quarantineChunks
	q.qlen--
	s, i := e.s, e.i
	q.qbytes -= int(s.size)
	s.chunks[i].freeNext = s.freeHead
	s.freeHead = i
	cl := s.cl
	s.used--
	if s.used == 0 || s.used == cl.perSlab-1 {
		a.slabChanged(cl, s)
	}
}

// flushQuarantine hands every chunk in quarantine to its free list, which
// may release slabs.
func (a *Arena) flushQuarantine() {
	for a.chk.qlen > 0 {
		a.evict()
	}
}

// misuse panics with a report of op on chunk i of s, with the stacks the
// tracker holds for it.
func (a *Arena) misuse(op, kind string, s *slab, i int32, detail string) {
	p := chunkAddr(s, i)
	m := &checked.Misuse{Allocator: "slab", Op: op, Kind: kind, Addr: p, Detail: detail}
	if s.chunks[i].refs <= 0 {
		withStacks(m, a.chk.trk.Freed(p), true)
	}
	panic(m)
}

// foreignFree panics with a report of a free of the buffer at p, in no
// chunk of the arena: a double free if a chunk freed there before had its
// slab released since, a foreign free otherwise.
func (a *Arena) foreignFree(op string, p uintptr) {
	panic(foreignMisuse(a.chk.trk, op, p))
}

func foreignMisuse(trk *checked.Tracker, op string, p uintptr) *checked.Misuse {
	m := &checked.Misuse{Allocator: "slab", Op: op, Kind: checked.ForeignFree, Addr: p}
	if r := trk.Freed(p); r != nil {
		m.Kind, m.Detail = checked.DoubleFree, "the chunk's slab was released since"
		withStacks(m, r, true)
	}
	return m
}

// staleLoc panics with a report of op on the stale Loc l, with the stacks
// of the chunk it named while they are known: until the chunk is handed
// out again (the quarantine delays that) or its slab released.
func (a *Arena) staleLoc(op string, l Loc) {
	m := &checked.Misuse{Allocator: "slab", Op: op, Kind: checked.StaleHandle}
	k := int(l.slab&slotMask) - 1
	var s *slab
	if l.slab&^slotMask == a.tag && k >= 0 && k < len(a.slabs) {
		s = a.slabs[k]
	}
	switch {
	case l.slab&^slotMask != a.tag:
		m.Detail = "a Loc of another shard or arena"
	case s == nil || int(l.chunk) >= len(s.chunks):
		m.Detail = "the chunk's slab was released"
	default:
		i := int32(l.chunk)
		ch := &s.chunks[i]
		m.Addr = chunkAddr(s, i)
		m.Detail = fmt.Sprintf("a Loc of generation %d; the chunk is at generation %d", l.gen, ch.gen)
		if ch.refs <= 0 && ch.gen == l.gen+1 {
			withStacks(m, a.chk.trk.Freed(m.Addr), true)
		}
	}
	panic(m)
}

// withStacks fills the size and stacks of m from r, if not nil: the
// allocation stack, and with free the stack of the free, each trimmed of
// the frames inside this package.
func withStacks(m *checked.Misuse, r *checked.Record, free bool) {
	if r == nil {
		return
	}
	m.Size = r.Size
	m.Alloc = checked.TrimPkg(r.Alloc, pkgPath)
	if free {
		m.Free = checked.TrimPkg(r.Free, pkgPath)
	}
}

// pkgPath is this package's import path.
const pkgPath = "github.com/memkit/memkit/slab"

// callerOp returns the name of the method skip frames above the caller of
// callerOp ("LocToBuf"), for reports from code shared by several methods.
// An unexported name (a chain release) reports as LocDecRef.
func callerOp(skip int) string {
	var pcs [1]uintptr
	if runtime.Callers(skip+2, pcs[:]) == 0 {
		return "?"
	}
	f, _ := runtime.CallersFrames(pcs[:]).Next()
	name := f.Function[strings.LastIndexByte(f.Function, '.')+1:]
	if name == "" || name[0] < 'A' || name[0] > 'Z' {
		return "LocDecRef"
	}
	return name
}
