package buddy

// alert is the state of WithBudgetAlert: the bytes of the blocks handed
// out, and which side of the threshold they are on. An Allocator is used by
// one goroutine at a time, so a plain counter does: no atomic on the hot
// path.
type alert struct {
	threshold int64
	fn        func(used int64, above bool)
	used      int64
	above     bool
}

// charge counts n bytes handed out, calling fn if they reach the
// threshold. It is kept out of line so that Alloc, which calls it only
// with the option, keeps its registers for the path without.
//
//go:noinline
func (al *alert) charge(n int64) {
	al.used += n
	if !al.above && al.used >= al.threshold {
		al.above = true
		al.fn(al.used, true)
	}
}

// release counts n bytes given back, calling fn if they fall below the
// threshold. Out of line, as charge.
//
//go:noinline
func (al *alert) release(n int64) {
	al.used -= n
	if al.above && al.used < al.threshold {
		al.above = false
		al.fn(al.used, false)
	}
}
