package slab_test

import (
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/offheap"
	"github.com/memkit/memkit/slab"
)

// An arena on off-heap memory: offheap.Malloc and offheap.Unmap plug into
// NewArena and WithFree, and a slab the arena releases is unmapped.
func TestArena_OffHeapSlabsAreUnmappedOnRelease(t *testing.T) {
	var before, during, after memkit.Stats
	offheap.ReadStats(&before)
	a, err := slab.NewArena(64, 1<<16, 2, offheap.Malloc, slab.WithFree(offheap.Unmap), slab.WithIdleSlabs(0))
	if err != nil {
		t.Fatal(err)
	}
	b := a.Alloc(1000)
	copy(b, "off the heap")
	offheap.ReadStats(&during)
	if during.LiveObjects != before.LiveObjects+1 || during.Allocs != before.Allocs+1 {
		t.Fatalf("one slab should be mapped: before %+v during %+v", before, during)
	}
	if string(b[:12]) != "off the heap" || !a.Owns(b) {
		t.Fatal("the chunk does not read back")
	}
	if !a.DecRef(b) {
		t.Fatal("DecRef of the only reference did not free the chunk")
	}
	a.FlushQuarantine()
	offheap.ReadStats(&after)
	if after.LiveObjects != before.LiveObjects || after.Frees != before.Frees+1 {
		t.Fatalf("the free slab was not unmapped: before %+v after %+v", before, after)
	}
}
