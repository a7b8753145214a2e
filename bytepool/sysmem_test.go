package bytepool_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/sysmem"
)

// refused is a size the machine refuses now, at most what the runtime
// could address (so that make would end the process with the runtime's
// fatal out-of-memory rather than panic in makeslice); the test skips
// where there is none (32-bit, or a kernel that accepts 64 TiB).
func refused(t *testing.T) int {
	t.Helper()
	if math.MaxInt < 1<<46 || sysmem.Available(tib64) {
		t.Skip("needs a 64-bit system that refuses to map 64 TiB")
	}
	return int(tib64)
}

// panicTooLarge is the panic of a Get of n bytes the machine cannot serve.
func panicTooLarge(n int) string {
	return fmt.Sprintf("memkit/bytepool: size %d is more than the machine can allocate now "+
		"(the runtime would end the process): bound sizes that come from outside before Get", n)
}

// TestGet_SizeTheMachineCannotServePanics: issue 21 case 1. A size between
// the machine's memory and 2^48 used to end the process with the runtime's
// fatal out-of-memory; every Get path asks the kernel first.
func TestGet_SizeTheMachineCannotServePanics(t *testing.T) {
	n := refused(t)
	want := panicTooLarge(n)
	memtest.CheckPanic(t, want, func() { bytepool.Get(n) })
	p := mustNew(t)
	memtest.CheckPanic(t, want, func() { p.Get(n) })
	memtest.CheckPanic(t, want, func() { p.NewCache().Get(n) })
	if b, ok := p.TryGet(n); ok || b != nil {
		t.Fatalf("TryGet(%d) = %d bytes, %v", n, len(b), ok)
	}
	bounded := mustNew(t, bytepool.WithPolicy(bytepool.Bounded))
	memtest.CheckPanic(t, want, func() { bounded.Get(n) })
	memtest.CheckPanic(t, want, func() { bounded.NewCache().Get(n) })

	// The pool still serves what it can.
	b := p.Get(100)
	p.Put(b)
}

// TestGet_ClassTheMachineCannotServe: a pool whose largest class is past
// the machine's memory panics (Get, Cache.Get) or reports false (TryGet)
// when it would have to make a buffer of that class, in both policies.
func TestGet_ClassTheMachineCannotServe(t *testing.T) {
	n := refused(t)
	want := panicTooLarge(n)
	for _, policy := range []bytepool.Policy{bytepool.Elastic, bytepool.Bounded} {
		t.Run(policy.String(), func(t *testing.T) {
			p := mustNew(t, bytepool.WithMaxSize(n), bytepool.WithPolicy(policy))
			memtest.CheckPanic(t, want, func() { p.Get(n) })
			memtest.CheckPanic(t, panicTooLarge(p.ClassSize(n/2+1)), func() { p.Get(n/2 + 1) }) // the message names the class
			memtest.CheckPanic(t, want, func() { p.NewCache().Get(n) })
			if b, ok := p.TryGet(n); ok || b != nil {
				t.Fatalf("TryGet(%d) = %d bytes, %v", n, len(b), ok)
			}
			b := p.Get(4096)
			p.Put(b)
		})
	}
}

// TestWithMaxSize_PastAnyAllocationIsAnError: WithMaxSize(1<<62) was
// accepted, and its Get(1<<62) panicked in makeslice.
func TestWithMaxSize_PastAnyAllocationIsAnError(t *testing.T) {
	if math.MaxInt < 1<<62 {
		t.Skip("an int cannot say 1<<62")
	}
	u := uint64(1) << 62
	huge := int(u)
	_, err := bytepool.New(bytepool.WithMaxSize(huge))
	want := fmt.Sprintf("memkit/bytepool: MaxSize %d is more than any one allocation can be (at most %d); lower it", huge, sysmem.MaxAlloc)
	if err == nil || err.Error() != want {
		t.Fatalf("New(WithMaxSize(1<<62)) = %v; want %q", err, want)
	}
	if _, err := bytepool.New(bytepool.WithMaxSize(int(tib64))); err != nil {
		t.Fatalf("New(WithMaxSize(1<<46)) = %v; want it accepted", err)
	}
}
