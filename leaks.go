package memkit

import (
	"errors"
	"fmt"

	"github.com/memkit/memkit/internal/checked"
)

// Leak is one allocation still live, as the checked build recorded it.
type Leak struct {
	Allocator string  // the allocator's package: "bytepool"
	Addr      uintptr // start of the allocation
	Size      int     // its size as requested
	Stack     string  // where it was allocated, formatted as in a panic
}

// String formats the leak with its allocation stack.
func (l Leak) String() string {
	return fmt.Sprintf("memkit/%s: %d bytes at %#x still live, allocated at:\n%s", l.Allocator, l.Size, l.Addr, l.Stack)
}

// ErrNotChecked is returned by [Leaks] in a release build.
var ErrNotChecked = errors.New("memkit: leak reports need the checked build: go test -tags memkitdebug")

// Misuse is the panic value of the checked build (-tags memkitdebug): what
// went wrong, in which allocator and operation, and the stacks of the
// allocation and the first free. It is an error, so a test or a recover can
// take it apart with errors.As:
//
//	var m *memkit.Misuse
//	if errors.As(err, &m) && m.Kind == "double free" { ... }
type Misuse = checked.Misuse

// Leaks lists the allocations src handed out and has not had back, with
// the stack of each allocation, in address order. In the same call it
// checks the memory src holds back from reuse after a free (its quarantine):
// if a freed block was written to, Leaks returns the leaks together with a
// [*Misuse] of kind "write after free" as its error, so a test that makes
// that mistake and then calls Leaks hears of it. It is meant for a test's
// cleanup:
//
//	t.Cleanup(func() {
//		leaks, err := memkit.Leaks(pool)
//		if len(leaks) > 0 {
//			t.Errorf("%d buffers not returned; the first:\n%v", len(leaks), leaks[0])
//		}
//		if err != nil && !errors.Is(err, memkit.ErrNotChecked) {
//			t.Error(err)
//		}
//	})
//
// Recording allocations costs a stack capture per allocation, so it happens
// only in the checked build (-tags memkitdebug); in a release build Leaks
// returns [ErrNotChecked]. src must be a memkit allocator, as returned by
// its constructor; for anything else Leaks returns an error.
func Leaks(src StatsSource) ([]Leak, error) {
	if !checked.Enabled {
		return nil, ErrNotChecked
	}
	t := checked.TrackerOf(src)
	if t == nil {
		return nil, fmt.Errorf("memkit: %T records no allocations; Leaks takes a memkit allocator", src)
	}
	live := t.Live()
	out := make([]Leak, len(live))
	for i := range live {
		r := &live[i]
		out[i] = Leak{Allocator: t.Allocator(), Addr: r.Addr, Size: r.Size, Stack: r.Alloc.String()}
	}
	if m := t.CheckHeld(); m != nil {
		return out, m
	}
	return out, nil
}
