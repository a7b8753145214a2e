// Package bytepool pools []byte buffers in size classes: Get(n) hands out
// a buffer of at least n bytes and Put takes it back for the next Get, so a
// program that keeps making short-lived byte slices of many sizes (reads,
// encodings, copies) stops paying the GC for each. Pick it over a bare
// sync.Pool when sizes vary (one sync.Pool per size is what it does, with
// misuse caught and stats kept), over package buffer when you want plain
// []byte rather than a growable Buffer, writer or reader (buffer draws its
// storage from bytepool), and over package slab when each buffer has one
// owner at a time who gives it back explicitly: slab is for chunks shared
// by several holders under reference counts, addressed by Loc handles. It
// replaces bytedance's mcache, bytebufferpool and libp2p's buffer pool.
//
//	p, _ := bytepool.New()
//	buf := p.Get(n) // len n, cap n rounded up to its class, locked
//	...
//	p.Put(buf)
//
// # Policies
//
// [Elastic] (the default) allocates each buffer from the Go heap on first use
// and keeps returned ones for reuse: what the recent peak of demand needed
// stays, however often the GC runs, and the rest goes back to the GC once
// demand has been lower for a second or two instead of staying pinned
// (golang/go#23199); see [RetentionPeriod].
//
// [Bounded] reserves one region of its budget at New and carves every
// buffer out of it: no per-buffer GC objects, and a hard bound on the
// memory the pool holds. When the region is used up, Get falls back to the
// heap and counts it, and [Pool.TryGet] reports false.
//
// More on classes, concurrency and cost, retention, misuse, checked build,
// budgets, statistics: docs/bytepool.md in the repository.
package bytepool
