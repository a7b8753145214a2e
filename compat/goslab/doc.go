// Package slab is a drop-in replacement for github.com/steveyen/go-slab (and
// its couchbase/go-slab fork) built on memkit's [github.com/memkit/memkit/slab]:
// the same package name, functions, methods and results. Pick it to move a
// go-slab program to memkit without changing its code; new code should use
// memkit's slab package itself, which adds TryAlloc, Shared, typed views and
// stats. Its neighbours do the same for other libraries: funnyslab
// (funny/slab, on bytepool), vikibytepool (Viki's bytepool, on buffer) and
// gomem (langhuihui/gomem, on extent and buffer).
//
// Migrating is a change of import path:
//
//	import "github.com/steveyen/go-slab"             // before
//	import slab "github.com/memkit/memkit/compat/goslab" // after
//
// NewArena returns an *Arena (no error), Arena.Alloc returns nil for a
// request larger than the slab size, Arena.BufToLoc returns the nil Loc for a
// nil buffer or one the arena does not own, Arena.LocDecRef has no result and
// Arena.Stats fills a map with go-slab's keys (totAllocs, totDecRefs, ...,
// slabClass-000000-chunkSize, ...), as in go-slab.
//
// # Differences from go-slab
//
// What go-slab let through silently, this package refuses, because it runs
// on memkit's arena:
//
//   - A DecRef of a chunk that is already free panics with "memkit/slab:
//     DecRef of a free chunk" (go-slab corrupted its free list).
//   - A Loc kept past the free of its chunk is stale: LocToBuf, LocAddRef and
//     LocDecRef panic with "memkit/slab: stale handle", even if the chunk was
//     handed out again (go-slab returned or freed the new owner's bytes).
//   - BufToLoc, AddRef, GetNext and SetNext of a buffer whose chunk is free
//     panic with "memkit/slab: use of a free chunk" or "memkit/slab: AddRef
//     of a free chunk".
//   - Every buffer's capacity is locked to the length requested, so append
//     past it reallocates instead of overwriting the next chunk.
//   - Chunk classes are rounded up to a multiple of 8 bytes and the last class
//     is the slab size: NewArena(10, 1000, 2, nil) has classes 16, 32, ...,
//     512, 1000 where go-slab had 10, 20, ..., 640, 1280. Every request that
//     fit still fits; Stats reports the real chunkSize of each class.
//   - Entirely free slabs are given back to the GC (one idle slab per class is
//     kept), so numSlabs can fall, where go-slab only grew.
//   - NewArena panics with a message naming the bad parameter for arguments
//     go-slab accepted and then misbehaved with (a growth factor of 1 or less,
//     a start chunk size above the slab size, a non-positive size).
//
// Arena.Unwrap returns the memkit arena underneath, for TryAlloc, ReadStats,
// typed views and chain readers and writers.
package slab
