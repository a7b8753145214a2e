//go:build !memkitdebug

package offheap_test

import (
	"testing"

	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/offheap"
)

// What the release build does with each mistake of the misuse suite
// (misuse_test.go runs under -tags memkitdebug). The address-sorted table
// of live mappings catches every bad Free with one binary search — a double
// free, memory the allocator did not map, a moved start, another
// Allocator's mapping — all with one message, and a caught Free changes
// nothing. Writes after free and past the end are caught, in both builds,
// by guard pages (guard_test.go); without them, a write after Free faults
// if the address is still unmapped, and past the end lands in the page
// slack the caller owns or faults.

func TestRelease_BadFreesCaught(t *testing.T) {
	m := memtest.NewModel(0)
	live := mustAlloc(t, 100)
	if _, err := m.Add(live); err != nil {
		t.Fatal(err)
	}
	defer mustFree(t, live)
	b := mustAlloc(t, 2*offheap.PageSize())
	g := newGuarded(t)
	x, _ := g.Alloc(10)
	for _, bad := range [][]byte{b[1:], b[offheap.PageSize():], make([]byte, 10), x} {
		memtest.CheckPanic(t, "memkit/offheap: double free or foreign memory", func() { _ = offheap.Free(bad) })
	}
	mustFree(t, b)
	memtest.CheckPanic(t, "memkit/offheap: double free or foreign memory", func() { _ = offheap.Free(b) })
	if err := m.VerifyAll(); err != nil {
		t.Fatal(err)
	}
	_ = g.Free(x)
}
