package arena

import "github.com/memkit/memkit/internal/budget"

// ErrBudget is returned by [TryNew], [TryMakeSlice] and [Typed.TryNew] when
// the request does not fit in the arena's [WithBudget] budget, or the
// [WithAccount] account refused the memory. The arena is left unchanged.
// errors.Is matches it with every memkit package's ErrBudget.
var ErrBudget error = budget.NewErrBudget("arena", "byte budget exhausted")

// Panic messages, exact, so that tests and callers can match them.
const (
	msgNegative = "memkit/arena: negative length"
	msgLenCap   = "memkit/arena: length greater than capacity"
	msgTooLarge = "memkit/arena: requested size too large"
	msgNoMemory = "memkit/arena: requested size more than the system can allocate"
	msgFreed    = "memkit/arena: use of freed arena"
	msgForeign  = "memkit/arena: Put of an arena not from this pool"
	msgPutTwice = "memkit/arena: Put of an arena already in the pool"
	msgClone    = "memkit/arena: Clone of a type that is not a pointer, slice or string"
	msgNoPool   = "memkit/arena: Pool not created with NewPool"
	msgNoTyped  = "memkit/arena: Typed not created with NewTyped"
)
