package slab_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/offheap"
	"github.com/memkit/memkit/slab"
)

// An arena on off-heap memory (WithOffHeap): a slab the arena releases is
// unmapped.
func TestArena_OffHeapSlabsAreUnmappedOnRelease(t *testing.T) {
	var before, during, after memkit.Stats
	offheap.ReadStats(&before)
	a, err := slab.NewArena(64, 1<<16, 2, nil, slab.WithOffHeap(), slab.WithIdleSlabs(0))
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

// WithOffHeap maps each slab with offheap and unmaps each slab the arena
// releases, in an Arena and a Shared.
func TestWithOffHeap_SlabsAreMappedAndUnmapped(t *testing.T) {
	for _, shared := range []bool{false, true} {
		var before, during, after memkit.Stats
		offheap.ReadStats(&before)
		var a interface {
			Alloc(int) []byte
			DecRef([]byte) bool
			FlushQuarantine()
		}
		if shared {
			a = mustShared(t, 64, 1<<16, slab.WithOffHeap(), slab.WithIdleSlabs(0))
		} else {
			a = mustArena(t, 64, 1<<16, 2, slab.WithOffHeap(), slab.WithIdleSlabs(0))
		}
		b := a.Alloc(1000)
		copy(b, "off the heap")
		offheap.ReadStats(&during)
		if during.ReservedBytes != before.ReservedBytes+1<<16 {
			t.Fatalf("shared %v: mapped %d bytes; want %d", shared, during.ReservedBytes, before.ReservedBytes+1<<16)
		}
		if string(b[:12]) != "off the heap" || !a.DecRef(b) {
			t.Fatalf("shared %v: the chunk does not read back or free", shared)
		}
		a.FlushQuarantine()
		if sh, ok := a.(*slab.Shared); ok {
			giveBackIdle(t, sh)
		}
		offheap.ReadStats(&after)
		if after.ReservedBytes != before.ReservedBytes {
			t.Fatalf("shared %v: %d bytes mapped after the release; want %d", shared, after.ReservedBytes, before.ReservedBytes)
		}
	}
}

// WithMalloc's error reaches TryAlloc as it is, in an Arena and a Shared,
// and a Shared stays usable after it (no shard left locked).
func TestWithMalloc_ErrorReachesTheCaller(t *testing.T) {
	errMapping := fmt.Errorf("%w: the region is full", slab.ErrNoSpace)
	fail := true
	malloc := func(n int) ([]byte, error) {
		if fail {
			return nil, errMapping
		}
		return make([]byte, n), nil
	}
	a := mustArena(t, 64, 4096, 2, slab.WithMalloc(malloc))
	sh := mustShared(t, 64, 4096, slab.WithMalloc(malloc), slab.WithShards(1))
	for _, x := range []interface {
		Alloc(int) []byte
		TryAlloc(int) ([]byte, error)
		ReadStats(*memkit.Stats)
		DecRef([]byte) bool
	}{a, sh} {
		fail = true
		if b, err := x.TryAlloc(64); b != nil || err != errMapping || !errors.Is(err, slab.ErrNoSpace) {
			t.Fatalf("TryAlloc = %v, %v; want nil, the malloc's error", b, err)
		}
		if x.Alloc(64) != nil {
			t.Fatal("Alloc returned a buffer without a slab")
		}
		var st memkit.Stats
		x.ReadStats(&st)
		if st.Failures != 2 || st.ReservedBytes != 0 {
			t.Fatalf("stats %v; want 2 failures, nothing reserved", &st)
		}
		fail = false
		b, err := x.TryAlloc(64)
		if err != nil || len(b) != 64 {
			t.Fatalf("TryAlloc after the source recovered = %d bytes, %v", len(b), err)
		}
		x.DecRef(b)
	}
}
