package arena_test

import (
	"testing"
	"unsafe"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/internal/memtest"
)

// big is an element type larger than a Typed's default chunk.
type big [100 << 10]byte

// TestTyped_ElementLargerThanAChunk: Typed.New of a type larger than its
// chunk indexed an empty chunk (an index-out-of-range panic). Each object
// now gets an allocation of its own, as Arena's large requests do; past
// the budget, one from the heap.
func TestTyped_ElementLargerThanAChunk(t *testing.T) {
	ty := arena.NewTyped[big]()
	var objs [][]byte
	for i := range 5 {
		p := ty.New()
		b := unsafe.Slice(&p[0], len(p))
		for _, o := range objs {
			if memtest.Overlap(o, b) {
				t.Fatalf("object %d overlaps an earlier one", i)
			}
		}
		if p[0] != 0 || p[len(p)-1] != 0 {
			t.Fatalf("object %d not zeroed", i)
		}
		memtest.Fill(b, uint64(i+1))
		objs = append(objs, b)
	}
	for i, o := range objs {
		if err := memtest.Verify(o, uint64(i+1)); err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
	}
	var s memkit.Stats
	ty.PublishStats()
	ty.ReadStats(&s)
	if s.LiveObjects != 5 || s.HeapFallbacks != 0 || s.ReservedBytes < 5*uint64(len(big{})) {
		t.Fatalf("after 5 New: %v", &s)
	}
	ty.Reset()
	if p := ty.New(); p[7] != 0 {
		t.Fatal("New after Reset not zeroed")
	}
	ty.Free()

	// Past the budget New falls back to the heap, and TryNew refuses.
	tb := arena.NewTyped[big](arena.WithBudget(150 << 10))
	tb.New()[0] = 1
	tb.New()[0] = 2
	if p, err := tb.TryNew(); p != nil || err == nil {
		t.Fatalf("TryNew past the budget = %p, %v", p, err)
	}
	tb.PublishStats()
	tb.ReadStats(&s)
	if s.LiveObjects != 1 || s.Allocs != 2 || s.HeapFallbacks != 1 || s.Failures != 1 { // a fallback object is the heap's, not live in the arena
		t.Fatalf("budgeted: %v", &s)
	}
}
