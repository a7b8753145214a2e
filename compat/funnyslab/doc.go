// Package slab is a drop-in replacement for github.com/funny/slab built on
// memkit's [github.com/memkit/memkit/bytepool]: the same package name, the
// Pool interface, NoPool and the four constructors with their parameters.
// Use it to move a funny/slab program to memkit by changing only the import
// path; new code should use bytepool itself. Despite the name it hands out
// plain buffers, without references (go-slab's refcounted chunks are in
// compat/goslab).
//
//	import "github.com/funny/slab"                          // before
//	import slab "github.com/memkit/memkit/compat/funnyslab" // after
//
// Each type's doc says what it now is; docs/migrating.md in the repository
// lists what differs from funny/slab on purpose.
package slab
