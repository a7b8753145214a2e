package slab

import (
	"unsafe"

	"github.com/memkit/memkit/internal/checked"
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
func (sh *Shared) IndexLen() int { return sh.index.Len() }

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

// SetReadStatsHook makes f run inside ReadStats between the loads of a
// class's counts and of its slab count, for tests of what a concurrent
// reader sees; nil removes it.
func SetReadStatsHook(f func()) { testHookReadStats = f }
