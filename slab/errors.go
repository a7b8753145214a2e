package slab

import (
	"errors"

	"github.com/memkit/memkit/internal/budget"
)

// ErrTooLarge is returned by [Arena.TryAlloc] for a request larger than the
// arena's largest chunk class (its slab size).
var ErrTooLarge = errors.New("memkit/slab: request larger than the largest chunk class")

// ErrNoSpace is returned by [Arena.TryAlloc] when the arena needs a new slab
// and malloc, the memory source given to [NewArena], returned none (nil, or
// fewer bytes than a slab). errors.Is matches it with every memkit
// package's ErrNoSpace: the memory source had nothing for the call.
var ErrNoSpace error = budget.NewErrNoSpace("slab", "malloc returned no slab")

// ErrBudget is returned by [Arena.TryAlloc] when the arena needs a new slab
// and taking it would exceed the arena's [WithBudget] budget. The arena is
// unchanged, except for Stats.Failures. errors.Is matches it with every
// memkit package's ErrBudget.
var ErrBudget error = budget.NewErrBudget("slab", "byte budget exhausted")

// errOverlap is grow's reason when malloc returned memory that overlaps a
// slab the arena (or another shard of its Shared) holds: the Arena panics
// with msgOverlap at once, a Shared once it has unlocked the shard.
var errOverlap = errors.New(msgOverlap)

// Panic messages, exact, so that tests and callers can match them.
const (
	msgNegative    = "memkit/slab: negative size"
	msgStale       = "memkit/slab: stale handle"
	msgDecRefFree  = "memkit/slab: DecRef of a free chunk"
	msgAddRefFree  = "memkit/slab: AddRef of a free chunk"
	msgAddRefNFree = "memkit/slab: AddRefN of a free chunk"
	msgFreeChunk   = "memkit/slab: use of a free chunk"
	msgForeign     = "memkit/slab: buffer not allocated by this arena"
	msgRefOverflow = "memkit/slab: reference count overflow"
	msgOverlap     = "memkit/slab: malloc returned memory that overlaps a slab the arena holds (a region handed out twice?)"

	// A DecRef that would drop a reference a chain predecessor holds.
	msgDecRefChained = "memkit/slab: DecRef of a chunk whose only references are its chain links (DecRef twice?)"
)
