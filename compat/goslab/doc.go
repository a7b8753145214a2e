// Package slab is a drop-in replacement for github.com/steveyen/go-slab (and
// its couchbase/go-slab fork) built on memkit's [github.com/memkit/memkit/slab]:
// the same package name, functions, methods and results. Use it to move a
// go-slab program to memkit by changing only the import path; new code
// should use memkit's slab package itself, which adds TryAlloc, Shared,
// typed views and stats.
//
//	import "github.com/steveyen/go-slab"                 // before
//	import slab "github.com/memkit/memkit/compat/goslab" // after
//
// What go-slab let through silently, a double DecRef or a stale Loc, this
// package refuses with a panic, and append past a buffer reallocates
// instead of overwriting the next chunk. Each method's doc says how;
// docs/migrating.md in the repository lists every difference.
package slab
