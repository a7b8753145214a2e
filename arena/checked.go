package arena

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
)

// The checked build (-tags memkitdebug). Every function here is called
// only under "if checked.Enabled", so the release build compiles the calls
// away.
//
// Memory an arena hands out is poisoned when Reset, Free or Pool.Put frees
// it (poison and unpoison, in types.go), and checked when it is handed out
// again. To name the stacks of a write after free, the checked build keeps
// a record per chunk, in a table shared by all arenas (chunks move between
// arenas through the recyclers): the stack of the allocation that brought
// the chunk into its arena, and of the Reset, Free or Put that last
// poisoned it.

// coreDebug is an arena's checked-build state.
type coreDebug struct {
	created checked.Stack // where the arena was made, or first used
	op      string        // the Reset, Free or Put freeing the arena's objects now, or that freed the arena
	stack   checked.Stack // its stack
}

// chunkRec is what the checked build knows of one chunk.
type chunkRec struct {
	size  uintptr
	alloc checked.Stack // the allocation that brought the chunk into its arena
	// Of the last Reset, Free or Put that poisoned the chunk: the call, its
	// stack, and the allocation that had brought the chunk in.
	op         string
	free       checked.Stack
	freedAlloc checked.Stack
}

// chunkRecs is the table of chunk records, by chunk address. A record
// goes when the GC collects its chunk.
var chunkRecs struct {
	sync.Mutex
	m map[uintptr]*chunkRec
}

// pkgPath is this package's import path.
const pkgPath = "github.com/memkit/memkit/arena"

// leakless is the tracker registered for lone arenas, for memkit.Leaks: an
// arena frees its objects together, so it lists none.
var leakless = checked.NewTracker("arena")

// debugInit starts the checked-build state of an arena, as it is made or
// first used.
func (c *core) debugInit() {
	if c.dbg == nil {
		c.dbg = &coreDebug{created: checked.Callers(checked.SkipWithin(pkgPath))}
	}
}

// freeing records that op (Reset, Free or Put), called from the stack
// above the caller, is freeing the arena's objects.
func (c *core) freeing(op string) {
	c.debugInit()
	c.dbg.op = op
	c.dbg.stack = checked.Callers(checked.SkipWithin(pkgPath))
}

// chunkTaken records that the chunk at p of size bytes came into an arena:
// a fresh one from the heap, or one from a recycler, whose record says
// what freed it last.
func chunkTaken(p unsafe.Pointer, size uintptr, fresh bool) {
	st := checked.Callers(checked.SkipWithin(pkgPath))
	key := uintptr(p)
	chunkRecs.Lock()
	defer chunkRecs.Unlock()
	if chunkRecs.m == nil {
		chunkRecs.m = make(map[uintptr]*chunkRec)
	}
	r := chunkRecs.m[key]
	if fresh || r == nil {
		// A chunk collected before may have left a record here, which its
		// cleanup, yet to run, removes only if it is still its own.
		r = &chunkRec{size: size}
		chunkRecs.m[key] = r
		runtime.AddCleanup((*byte)(p), func(e chunkEntry) {
			chunkRecs.Lock()
			if chunkRecs.m[e.key] == e.r {
				delete(chunkRecs.m, e.key)
			}
			chunkRecs.Unlock()
		}, chunkEntry{key, r})
	}
	r.alloc = st
}

// chunkEntry is the argument of a chunk's cleanup.
type chunkEntry struct {
	key uintptr
	r   *chunkRec
}

// notePoisoned records that c is poisoning what lane s handed out.
func (c *core) notePoisoned(s *lane) {
	if c.dbg == nil || !s.info.poisons() {
		return
	}
	chunkRecs.Lock()
	defer chunkRecs.Unlock()
	note := func(p unsafe.Pointer) {
		if r := chunkRecs.m[uintptr(p)]; r != nil {
			r.op, r.free, r.freedAlloc = c.dbg.op, c.dbg.stack, r.alloc
		}
	}
	if s.base != nil && s.off > 0 {
		note(s.base)
	}
	for i := range s.full {
		note(s.full[i].p)
	}
}

// writtenAfterFree panics with the report of a write after free found
// at byte k of the n bytes from p being handed out.
func writtenAfterFree(p unsafe.Pointer, n, k uintptr) {
	at := uintptr(p) + k
	var r *chunkRec
	chunkRecs.Lock()
	for base, c := range chunkRecs.m {
		if at >= base && at-base < c.size {
			r = c
			break
		}
	}
	chunkRecs.Unlock()
	rec := &checked.Record{Addr: uintptr(p), Size: int(n)}
	detail := fmt.Sprintf("byte %d of the %d bytes handed out was written after its arena freed it", k, n)
	if r != nil && r.op != "" {
		detail = fmt.Sprintf("byte %d of the %d bytes handed out was written after %s freed it", k, n, r.op)
		rec.Alloc, rec.Free = r.freedAlloc, r.free
	}
	panic(report("New", checked.UseAfterFree, uintptr(p), rec, detail))
}

// freedMisuse panics with the report of op on an arena that was freed: a
// second Free is a double free, anything else a use after free.
func (c *core) freedMisuse(op string, arena unsafe.Pointer) {
	kind, detail := checked.UseAfterFree, "a call on an arena that was freed"
	if op == "Free" {
		kind, detail = checked.DoubleFree, "the arena was freed before"
	}
	var rec *checked.Record
	if c.dbg != nil {
		rec = &checked.Record{Alloc: c.dbg.created, Free: c.dbg.stack}
	}
	panic(report(op, kind, uintptr(arena), rec, detail))
}

// pooledMisuse panics with the report of op on an arena given back to its
// pool by Put: a use after free, with the stacks of the Get and the Put.
func (p *Pool) pooledMisuse(op string, a *Arena) {
	addr := uintptr(unsafe.Pointer(a))
	panic(report(op, checked.UseAfterFree, addr, p.trk.Freed(addr), "a call on an arena given back to its Pool"))
}

// foreignPut panics with the report of a Put to p of a, not from p.
func (p *Pool) foreignPut(a *Arena) {
	var rec *checked.Record
	if a != nil && a.dbg != nil {
		rec = &checked.Record{Alloc: a.dbg.created}
	}
	panic(report("Put", checked.ForeignFree, uintptr(unsafe.Pointer(a)), rec, "an arena not from this Pool's Get"))
}

// report is checked.Report for this package. Its stacks start at the
// user's call: they were captured with checked.SkipWithin.
func report(op, kind string, addr uintptr, rec *checked.Record, detail string) *checked.Misuse {
	return checked.Report("arena", op, kind, addr, rec, detail)
}
