package slab

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/race"
	"github.com/memkit/memkit/internal/shard"
)

// Test-only access to internals.

// Slabs reports how many slabs the arena holds.
func (a *Arena) Slabs() int { return len(a.index) }

// AllocOn allocates from shard k, so that tests can build chains across
// shards.
func (sh *Shared) AllocOn(k, n int) []byte {
	s := &sh.shards[k]
	s.lock()
	b := s.a.Alloc(n)
	s.unlock()
	sh.deliverAlerts()
	return b
}

// IndexLen reports how many slabs the shared index holds.
func (sh *Shared) IndexLen() int {
	sh.indexMu.Lock()
	defer sh.indexMu.Unlock()
	return len(sh.index)
}

// FlushQuarantine hands the chunks the checked build holds in quarantine
// to their free lists, as a release build's DecRef does at once, so that
// tests of reuse and slab release run in both builds. It does nothing in a
// release build.
func (a *Arena) FlushQuarantine() {
	if checked.Enabled {
		a.flushQuarantine()
	}
}

// FlushQuarantine is [Arena.FlushQuarantine] for a Shared.
func (sh *Shared) FlushQuarantine() {
	if checked.Enabled {
		sh.trk.Flush("Alloc")
		sh.deliverAlerts()
	}
}

// HeaderPageOffset reports how far, modulo 4 KiB, the bookkeeping of the
// chunk of buf lies from the chunk's first byte.
func (a *Arena) HeaderPageOffset(buf []byte) uintptr {
	s, i := a.mustChunkOf(buf)
	hdr := uintptr(unsafe.Pointer(s.chunkAt(i)))
	return (hdr - uintptr(unsafe.Pointer(unsafe.SliceData(buf)))) % 4096
}

// AliasSkip and HeaderSize expose how newChunks places the headers.
var AliasSkip = aliasSkip

// HeaderSize is the size of one chunk header.
const HeaderSize = unsafe.Sizeof(chunk{})

// PubEvery is how many hot-path operations a class counts between two
// publications of its counts.
const PubEvery = pubEvery

// PublishStats makes ReadStats exact, for tests that compare the stats
// with a model: the owner (of every shard, for a Shared) publishes its
// exact counts.
func PublishStats(x any) {
	switch x := x.(type) {
	case *Arena:
		x.publishAll()
	case *Shared:
		for k := range x.shards {
			s := &x.shards[k]
			s.lock()
			s.a.publishAll()
			s.unlock()
		}
	}
}

// Sweep gives the chunks the idle sets hold without a ticket back to their
// slabs, as the sweep after every GC does.
func (sh *Shared) Sweep() { sh.sweep() }

// SetReadStatsHook makes f run inside ReadStats between the loads of a
// class's counts and of its slab count, for tests of what a concurrent
// reader sees; nil removes it.
func SetReadStatsHook(f func()) { testHookReadStats = f }

// GiveBackIdle runs GCs, each followed by a sweep, until the classes' idle
// sets hold no chunk, as a program's GCs do over time, and reports whether
// they emptied within a hundred. The checked build has no idle sets; under
// the race detector they keep their chunks (see Shared), and it reports
// false at once.
func (sh *Shared) GiveBackIdle() bool {
	if sh.fronts == nil {
		return true
	}
	if race.Enabled {
		return false
	}
	for range 100 {
		runtime.GC()
		runtime.Gosched() // let the cleanup goroutine run
		sh.sweep()
		if sh.IdleHeld() == 0 {
			return true
		}
	}
	return false
}

// IdleHeld reports how many chunks the idle sets hold (carved for them,
// not reclaimed, and not out).
func (sh *Shared) IdleHeld() int {
	if sh.fronts == nil {
		return 0
	}
	var held uint64
	outs := make([]uint64, len(sh.sizes))
	for k := range sh.shards {
		s := &sh.shards[k]
		s.lock()
		for c := range s.a.classes {
			held += s.a.classes[c].carved - s.a.classes[c].drained
		}
		s.a.countFront(outs, make([]uint64, len(outs)))
		s.unlock()
	}
	for _, o := range outs {
		held -= o
	}
	return int(held)
}

// Account takes every chunk the classes' idle sets hold, running GCs so
// that the chunks whose tickets a GC dropped come back (up to a hundred
// GCs), checks that none comes out twice and each is free, gives them all
// back, and reports, for all classes, how many it took (idle), how many
// chunks are out of the sets (a ticket in their slot: live), and how many
// the shards carved for the sets and did not reclaim (carved), which
// should be idle + live.
func (sh *Shared) Account() (idle, live, carved int, err error) {
	if sh.fronts == nil {
		return 0, 0, 0, nil
	}
	count := func() (live, carved int) {
		outs := make([]uint64, len(sh.sizes))
		for k := range sh.shards {
			s := &sh.shards[k]
			s.lock()
			for c := range s.a.classes {
				carved += int(s.a.classes[c].carved - s.a.classes[c].drained)
			}
			s.a.countFront(outs, make([]uint64, len(outs)))
			s.unlock()
		}
		for _, o := range outs {
			live += int(o)
		}
		return live, carved
	}
	var taken []*shard.Ticket
	seen := map[uintptr]bool{}
	for gcs := 0; ; gcs++ {
		for _, x := range sh.fronts {
			for t := x.Get(); t != nil; t = x.Get() {
				if seen[t.Key()] {
					err = fmt.Errorf("chunk %#x taken twice from its idle set", t.Key())
				}
				seen[t.Key()] = true
				if f := frontOf(t.Key()); f.s.chunks[f.i].refs != 0 && err == nil {
					err = fmt.Errorf("chunk %d of a slab idle with %d references", f.i, f.s.chunks[f.i].refs)
				}
				taken = append(taken, t)
			}
		}
		// What is not out now should have come out of the sets.
		if live, carved = count(); live == carved || gcs == 100 {
			break
		}
		runtime.GC()
		runtime.Gosched() // let the cleanup goroutine run
	}
	live -= len(taken)
	for _, t := range taken {
		f := frontOf(t.Key())
		f.slot.Take()
		f.s.idle.Put(t)
	}
	return len(taken), live, carved, err
}

// SlabTableFinds builds a Shared's lookup table of slabs of slabSize bytes
// at bases (sorted, not overlapping) and returns, for each address, the
// index in bases of the slab the table finds for it, or -1.
func SlabTableFinds(bases []uintptr, slabSize int, addrs []uintptr) []int {
	return tableFinds(bases, slabSize, nil, addrs, func(sh *Shared, p uintptr) *slab { return sh.slabAt(p) })
}

// SlabTableOpens is SlabTableFinds for the lookup of the lock-free paths
// (hit, then openAt when it misses), with the slabs' open spans set to
// span[i] bytes (0: chained).
func SlabTableOpens(bases []uintptr, slabSize int, span []uintptr, addrs []uintptr) []int {
	return tableFinds(bases, slabSize, span, addrs, func(sh *Shared, p uintptr) *slab {
		s := sh.loadTable().hit(p)
		off := p - s.base
		if off >= s.hitSpan() {
			s, off = sh.openAt(p)
		}
		if s != nil && s.base+off != p {
			panic("the offset is not the address's")
		}
		return s
	})
}

// tableFinds is SlabTableFinds with lookup, and the slabs' open spans
// from span if not nil.
func tableFinds(bases []uintptr, slabSize int, span []uintptr, addrs []uintptr, lookup func(*Shared, uintptr) *slab) []int {
	idx := make([]slabOwner, len(bases))
	which := map[*slab]int{}
	for i, b := range bases {
		idx[i] = slabOwner{base: b, s: &slab{base: b}}
		if span != nil {
			idx[i].s.open, idx[i].s.fast = span[i], span[i]
		}
		which[idx[i].s] = i
	}
	sh := &Shared{}
	sh.storeTable(newSlabTable(idx, slabSize))
	found := make([]int, len(addrs))
	for i, p := range addrs {
		found[i] = -1
		if s := lookup(sh, p); s != nil {
			found[i] = which[s]
		}
	}
	return found
}

// ChunkIndex returns what a slab of chunks of size bytes takes for
// off/size.
func ChunkIndex(size, off uint32) uint32 {
	s := &slab{size: uintptr(size), recip: ^uint64(0)/uint64(size) + 1}
	return s.chunkIndex(off)
}

// HitChunkIndex returns the hit span of a slab of c chunks of size bytes
// and what hitChunk's multiply by the slab's magic takes for off/size
// (the multiply alone: a slab of 2^30 chunks has no bookkeeping here).
func HitChunkIndex(c, size uint32, off uintptr) (span uintptr, i uintptr) {
	span, m := fastSpan(c, size)
	return span, uintptr(uint64(off) * m >> 32)
}

// HitSpanOf returns the hit span of the slab of buf, in a Shared.
func (sh *Shared) HitSpanOf(buf []byte) uintptr {
	return sh.slabAt(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))).hitSpan()
}
