package extent

import (
	"errors"
	"fmt"

	"github.com/memkit/memkit/internal/budget"
)

// ErrBudget is returned by [Allocator.TryMalloc] when a request does not fit
// in the free ranges and a new block would pass the budget set with
// [WithBudget]. The allocator is left unchanged but for Stats.Failures.
// errors.Is matches it with the ErrBudget of every memkit package.
var ErrBudget error = budget.NewErrBudget("extent", "no free range fits and a new block would pass the WithBudget limit")

// tooLargeError is TryMalloc's error for n bytes the system cannot provide
// at all (see internal/sysmem). errors.Is matches it with ErrBudget (and
// so with every package's ErrBudget), the budget being the machine's.
type tooLargeError struct{ n int }

func (e tooLargeError) Error() string { return fmt.Sprintf(errTooLargeFmt, "TryMalloc", e.n) }

func (e tooLargeError) Is(target error) bool { return errors.Is(ErrBudget, target) }

// The release build's panics.
const (
	errNegative   = "memkit/extent: negative size"
	errDoubleFree = "memkit/extent: double free"
	errForeign    = "memkit/extent: foreign memory"
	errKeep       = "memkit/extent: FreeRest keep out of range"
	// errTooLargeFmt is the panic of a Malloc or Borrow of more bytes than
	// the system can provide (see internal/sysmem), with the call and n.
	errTooLargeFmt = "memkit/extent: %s of %d bytes: more than the system can provide"
)

func errorf(format string, args ...any) error { return fmt.Errorf("memkit/extent: "+format, args...) }
