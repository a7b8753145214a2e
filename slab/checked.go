package slab

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// The checked build (-tags memkitdebug). Every function here is called
// only under "if checked.Enabled", so the release build compiles the calls
// away. Freed chunks wait in the tracker's quarantine (checked.Tracker.Hold,
// bounded by checked.QuarantineBytes and QuarantineBlocks), poisoned, so
// that a late DecRef finds them free and a write after free is reported
// when they leave it, or earlier by memkit.Leaks.

// arenaChecked is an Arena's checked-build state.
type arenaChecked struct {
	trk *checked.Tracker // shared by the shards of a Shared

	// For a shard of a Shared: the shard's lock, which a chunk's release
	// from the quarantine takes, and the chunks freed under it, which the
	// Shared hands to the tracker's quarantine once it has unlocked the
	// shard (Tracker.Hold may release other chunks, of any shard).
	guard   sync.Locker
	pending []heldChunk

	// By chunk address: the stack of the DecRef that left a chunk held by
	// its chain predecessors only, the first free of a DecRef too many.
	lastDecRef map[uintptr]checked.Stack
}

// heldChunk is a freed chunk on its way into the tracker's quarantine.
type heldChunk struct {
	s   *slab
	i   int32
	rec *checked.Record
}

// chunkAddr returns the address of chunk i of s.
func chunkAddr(s *slab, i int32) uintptr { return s.base + uintptr(i)*uintptr(s.size) }

// chunkMem returns all the memory of chunk i of s, its class size.
func chunkMem(s *slab, i int32) []byte {
	return unsafe.Slice((*byte)(s.chunkPtr(i)), s.size)
}

// checkAlloc checks the chunk alloc is about to hand out of s for a
// request of n bytes: it must still hold the poison its free left (or grow
// put there), which the quarantine verified when it released the chunk,
// so a change here is a write after it left the quarantine. It then fills
// the slack after n bytes with guard bytes and records the allocation.
func (a *Arena) checkAlloc(s *slab, n int) {
	i := s.freeHead
	if i < 0 {
		i = s.fresh
	}
	mem := chunkMem(s, i)
	p := chunkAddr(s, i)
	if k := checked.IndexNot(mem, checked.PoisonByte); k >= 0 {
		checked.Fill(mem, checked.PoisonByte) // the arena stays usable
		panic(report(a.chk.trk, "Alloc", checked.UseAfterFree, p, a.chk.trk.Freed(p), true,
			fmt.Sprintf("byte %d of the %d-byte chunk changed after its last DecRef", k, s.size)))
	}
	checked.Fill(mem[n:], checked.GuardByte)
	// The stack starts at the caller of the arena.
	a.chk.trk.Alloc(p, n, checked.SkipWithin(pkgPath))
}

// checkFree frees chunk i of s, whose last reference just went, in the
// checked build: it records the free, checks the guard bytes after the
// allocation, and hands the chunk to the tracker's quarantine, which
// poisons it and keeps it out of reuse, instead of to the free list. It
// panics with an Overflow after all that if a guard byte changed.
func (a *Arena) checkFree(s *slab, i int32) {
	p := chunkAddr(s, i)
	delete(a.chk.lastDecRef, p)
	r := a.chk.trk.Free("DecRef", p, checked.SkipWithin(pkgPath)) // live: this does not panic
	mem := chunkMem(s, i)
	bad := checked.IndexNot(mem[r.Size:], checked.GuardByte)
	if a.chk.guard != nil {
		a.chk.pending = append(a.chk.pending, heldChunk{s, i, r})
	} else {
		a.hold(heldChunk{s, i, r})
	}
	if bad >= 0 {
		panic(report(a.chk.trk, "DecRef", checked.Overflow, p, r, false,
			fmt.Sprintf("byte %d past the end of the allocation (chunk of %d bytes) was written", bad, s.size)))
	}
}

// hold hands a freed chunk to the tracker's quarantine, with the function
// that puts it on its free list once it leaves. The caller must not hold
// the lock of any shard of a Shared: the tracker may release chunks of
// any shard from here.
func (a *Arena) hold(h heldChunk) {
	release := func() { a.unhold(h.s, h.i) }
	if g := a.chk.guard; g != nil {
		release = func() {
			g.Lock()
			defer g.Unlock()
			a.unhold(h.s, h.i)
		}
	}
	a.chk.trk.Hold("DecRef", h.rec, chunkMem(h.s, h.i), release)
}

// takePending returns the chunks freed under a shard's lock, for the
// Shared to hold once it unlocked the shard.
func (a *Arena) takePending() []heldChunk {
	p := a.chk.pending
	a.chk.pending = nil
	return p
}

// unhold puts chunk i of s, out of quarantine, on its slab's free list, as
// a release build's DecRef does at once.
func (a *Arena) unhold(s *slab, i int32) {
	if a.pushFree(s, &s.chunks[i], i) {
		a.slabChanged(s.cl, s)
	}
}

// flushQuarantine hands every chunk in the quarantine to its free list,
// which may release slabs. For an Arena of its own only: a Shared flushes
// its tracker with no shard locked.
func (a *Arena) flushQuarantine() {
	a.chk.trk.Flush("Alloc")
}

// quarantined reports whether an Arena of its own has chunks in the
// quarantine that flushQuarantine would hand back.
func (a *Arena) quarantined() bool {
	if a.chk.guard != nil {
		return false
	}
	n, _ := a.chk.trk.Held()
	return n > 0
}

// misuse panics with a report of op on chunk i of s, with the stacks the
// tracker holds for it: of its allocation, and of its free if it is free.
func (a *Arena) misuse(op, kind string, s *slab, i int32, detail string) {
	p := chunkAddr(s, i)
	if s.chunks[i].loadRefs() <= 0 {
		panic(report(a.chk.trk, op, kind, p, a.chk.trk.Freed(p), true, detail))
	}
	panic(report(a.chk.trk, op, kind, p, a.chk.trk.Lookup(p), false, detail))
}

// noteLastDecRef records the stack of the DecRef that just left chunk i of
// s with no reference but its chain predecessors'.
func (a *Arena) noteLastDecRef(s *slab, i int32) {
	if a.chk.lastDecRef == nil {
		a.chk.lastDecRef = make(map[uintptr]checked.Stack)
	}
	a.chk.lastDecRef[chunkAddr(s, i)] = checked.Callers(checked.SkipWithin(pkgPath))
}

// chainedMisuse panics with the report of a DecRef of chunk i of s that
// would drop a reference its chain predecessors hold: a double free, whose
// first free is the DecRef that dropped the caller's last reference.
func (a *Arena) chainedMisuse(s *slab, i int32) {
	p := chunkAddr(s, i)
	var r checked.Record
	if live := a.chk.trk.Lookup(p); live != nil {
		r = *live
	}
	r.Free = a.chk.lastDecRef[p]
	panic(report(a.chk.trk, "DecRef", checked.DoubleFree, p, &r, true,
		"the chunk's only references are its chain predecessors'; the DecRef that dropped the last other one is the first free"))
}

// foreignFree panics with a report of a free of the buffer at p, in no
// chunk of the arena: a double free if a chunk freed there before had its
// slab released since, a foreign free otherwise.
func (a *Arena) foreignFree(op string, p uintptr) {
	panic(foreignMisuse(a.chk.trk, op, p))
}

func foreignMisuse(trk *checked.Tracker, op string, p uintptr) *checked.Misuse {
	if r := trk.Freed(p); r != nil {
		return report(trk, op, checked.DoubleFree, p, r, true, "the chunk's slab was released since")
	}
	return report(trk, op, checked.ForeignFree, p, nil, false, "")
}

// staleLoc panics with a report of op on the stale Loc l, with the stacks
// of the chunk it named while they are known: until the chunk is handed
// out again (the quarantine delays that) or its slab released.
func (a *Arena) staleLoc(op string, l Loc) {
	sref := l.sref()
	k := int(sref&a.numMask) - 1
	var s *slab
	if sref&^a.numMask == a.tag && k >= 0 && k < len(a.slabs) {
		s = a.slabs[k]
	}
	switch {
	case sref&^a.numMask != a.tag:
		panic(report(a.chk.trk, op, checked.StaleHandle, 0, nil, false, "a Loc of another shard or arena"))
	case s == nil || int(l.chunk()) >= len(s.chunks):
		panic(report(a.chk.trk, op, checked.StaleHandle, 0, nil, false, "the chunk's slab was released"))
	}
	i := int32(l.chunk())
	ch := &s.chunks[i]
	p := chunkAddr(s, i)
	var r *checked.Record
	if ch.loadRefs() <= 0 && (ch.loadGen()-1)&genMask == l.gen() {
		r = a.chk.trk.Freed(p)
	}
	panic(report(a.chk.trk, op, checked.StaleHandle, p, r, true,
		fmt.Sprintf("a Loc of generation %d; the chunk is at generation %d (mod %d)", l.gen(), ch.loadGen()&genMask, genMask+1)))
}

// report is trk.Report (whose stacks, captured with checked.SkipWithin,
// start at the caller); without free, it leaves out the free stack.
func report(trk *checked.Tracker, op, kind string, p uintptr, r *checked.Record, free bool, detail string) *checked.Misuse {
	m := trk.Report(op, kind, p, r, detail)
	if !free {
		m.Free = checked.Stack{}
	}
	return m
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
