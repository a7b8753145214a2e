package kv

import (
	"errors"

	"github.com/memkit/memkit/internal/budget"
)

// ErrBudget is returned by [Map.Set] when storing the entry would take the
// Map past its [WithBudget] budget and the Map does not evict
// ([WithEviction]): the Map is unchanged (the key keeps its old value, if
// it had one). Delete entries or raise the budget. errors.Is matches it
// with every memkit package's ErrBudget.
var ErrBudget error = budget.NewErrBudget("kv", "byte budget exhausted")

// ErrNoSpace is returned by [Map.Set] when the system refused the memory
// for a new segment or a larger index (mmap failed); the Map is unchanged.
// errors.Is matches it with every memkit package's ErrNoSpace.
var ErrNoSpace error = budget.NewErrNoSpace("kv", "the system refused memory")

// ErrTooLarge is returned by [Map.Set] for a key longer than [MaxKeyLen]
// or a value longer than [MaxValueLen].
var ErrTooLarge = errors.New("memkit/kv: key or value too large (see kv.MaxKeyLen, kv.MaxValueLen)")

// Panic messages, exact, so that tests and callers can match them.
const (
	msgNil    = "memkit/kv: method called on a nil *Map (create it with kv.New)"
	msgClosed = "memkit/kv: use of a closed Map"
)
