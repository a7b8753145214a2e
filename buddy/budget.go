package buddy

import "github.com/memkit/memkit/internal/budget"

// alert is the state of WithBudgetAlert: the bytes of the blocks handed
// out, and the edge that reports their crossings of the threshold. An
// Allocator is used by one goroutine at a time, so a plain counter does,
// and the edge is flipped once per change.
type alert struct {
	edge budget.Edge
	used int64
}

// add counts n bytes handed out (n < 0: given back), calling fn if they
// cross the threshold. It is kept out of line so that Alloc and Free,
// which call it only with the option, keep their registers for the path
// without.
//
//go:noinline
func (al *alert) add(n int64) {
	al.used += n
	al.edge.Flip(al.used)
}
