package slab_test

import (
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/slab"
)

const panicOverlap = "memkit/slab: malloc returned memory that overlaps a slab the arena holds (a region handed out twice?)"

// carver returns a malloc that cuts slabs from one region, stepping by
// step bytes: a step below the slab size is the mistake of issue 21's
// third case, a pre-carved region that forgot to advance.
func carver(region []byte, step int) func(int) []byte {
	next := 0
	return func(n int) []byte {
		if next+n > len(region) {
			return nil
		}
		b := region[next : next+n : next+n]
		next += step
		return b
	}
}

// A malloc that returns memory overlapping a slab the arena holds is
// refused when the arena grows, whole or in part, in an Arena and across
// the shards of a Shared: one chunk never gets two owners.
func TestArena_OverlappingMallocPanics(t *testing.T) {
	for _, step := range []int{0, 2048, 4095} {
		region := make([]byte, 1<<16)
		a2, _ := slab.NewArena(4096, 4096, 2, carver(region, step))
		first := a2.Alloc(4096)
		memtest.Fill(first, 1)
		memtest.CheckPanic(t, panicOverlap, func() { a2.Alloc(4096) })
		if err := memtest.Verify(first, 1); err != nil {
			t.Fatalf("step %d: the first slab changed: %v", step, err)
		}
		if s := readStats(a2); s.Grows != 1 || s.ReservedBytes != 4096 || s.Failures == 0 {
			t.Fatalf("step %d: stats %v; want 1 slab, the refusal counted", step, &s)
		}
	}
}

func TestShared_OverlappingMallocPanics(t *testing.T) {
	region := make([]byte, 1<<16)
	sh2, err := slab.NewShared(4096, 4096, 2, carver(region, 1024), slab.WithShards(2))
	if err != nil {
		t.Fatal(err)
	}
	first := sh2.AllocOn(0, 4096)
	memtest.Fill(first, 1)
	// Another shard's slab from the same memory: refused once the shard is
	// unlocked, so the Shared stays usable.
	memtest.CheckPanic(t, panicOverlap, func() { sh2.Alloc(4096) })
	if sh2.IndexLen() != 1 {
		t.Fatalf("the index holds %d slabs; want 1", sh2.IndexLen())
	}
	if s := sharedStats(sh2); s.Grows != 1 || s.LiveObjects != 1 {
		t.Fatalf("stats %v; want 1 slab, 1 chunk live", &s)
	}
	if !sh2.DecRef(first) {
		t.Fatal("DecRef of the one chunk did not free it")
	}
}

// A Shared's budget alert may call the Shared's methods, ReadStats
// included: it runs once the shard is unlocked (on main it ran under the
// shard's spinlock, and a ReadStats in it spun forever).
func TestShared_BudgetAlertMayCallTheArena(t *testing.T) {
	var sh *slab.Shared
	var keep []byte
	var calls []bool
	var reserved []uint64
	sh = mustShared(t, 64, 4096, slab.WithShards(2), slab.WithIdleSlabs(0),
		slab.WithBudgetAlert(8192, func(used int64, above bool) {
			calls = append(calls, above)
			var st memkit.Stats
			sh.ReadStats(&st)
			reserved = append(reserved, st.ReservedBytes)
			if !sh.Owns(keep) {
				t.Error("Owns of a live chunk is false")
			}
		}))
	keep = sh.AllocOn(1, 4096)
	a := sh.AllocOn(0, 4096)
	b := sh.AllocOn(0, 4096)
	c := sh.Alloc(4096)
	if len(calls) != 1 || !calls[0] || reserved[0] < 8192 {
		t.Fatalf("alert calls %v, reserved %v; want one rise seen at >= 8192 bytes", calls, reserved)
	}
	sh.DecRef(a)
	sh.DecRef(b)
	sh.DecRef(c)
	if checked.Enabled {
		sh.DecRef(keep)
		return // the freed chunks wait in the quarantine: their slabs stay
	}
	giveBackIdle(t, sh) // c's slab goes once the GC finds c idle
	sh.DecRef(keep)
	if len(calls) != 2 || calls[1] {
		t.Fatalf("alert calls %v; want a rise then a fall", calls)
	}
}

// ReadStats from another goroutine never reports an impossible state,
// even when the owner frees chunks and releases their slab between the
// reader's loads: chunks in use never exceed what the slabs hold.
func TestArena_ReadStatsNeverInUseAboveReserved(t *testing.T) {
	a := mustArena(t, 64, 4096, 2, slab.WithIdleSlabs(0))
	bufs := make([][]byte, 40)
	for i := range bufs {
		bufs[i] = a.Alloc(64)
	}
	slab.PublishStats(a)
	once := true
	slab.SetReadStatsHook(func() {
		if once { // the owner works between the reader's loads
			once = false
			for _, b := range bufs {
				a.DecRef(b)
			}
		}
	})
	defer slab.SetReadStatsHook(nil)
	var st memkit.Stats
	a.ReadStats(&st)
	if st.InUseBytes > st.ReservedBytes || st.LiveObjects > st.ReservedBytes/64 {
		t.Fatalf("stats %v: in use above reserved", &st)
	}
	for _, c := range st.Classes {
		if c.InUseBytes > c.ReservedBytes {
			t.Fatalf("class %d: %d bytes in use, %d reserved", c.Size, c.InUseBytes, c.ReservedBytes)
		}
	}
}
