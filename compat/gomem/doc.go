// Package gomem is a drop-in replacement for the allocator and multi-buffer
// API of github.com/langhuihui/gomem (Monibuca's pkg/util), built on memkit's
// [extent.Allocator] and [buffer.Slice]/[buffer.Reader]: the same package
// name and the names its users call. Use it to move a gomem program to
// memkit by changing only the import path; new code should use extent (or
// extent.Shared across goroutines) for exact-size ranges, buffer's Slice
// and Reader for the multi-buffer view, or buddy for power-of-two sizes in
// one fixed region.
//
//	import "github.com/langhuihui/gomem"           // before
//	import "github.com/memkit/memkit/compat/gomem" // after
//
// As in gomem, an allocator, a Memory and a MemoryReader are for one
// goroutine at a time. Each type's doc says what it costs; docs/migrating.md
// in the repository lists what differs from gomem on purpose.
package gomem
