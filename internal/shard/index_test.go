package shard_test

import (
	"testing"

	"github.com/memkit/memkit/internal/shard"
)

func TestIndex_AddFindRemove(t *testing.T) {
	var x shard.Index
	if x.Find(100, 101) != nil {
		t.Fatal("an empty index found a range")
	}
	if !x.Add(1000, 2000, 1) || !x.Add(3000, 4000, 2) || !x.Add(2000, 3000, 3) {
		t.Fatal("Add of disjoint ranges refused")
	}
	for _, c := range []struct {
		base, end uintptr
	}{{1500, 2500}, {500, 1001}, {3999, 5000}, {1000, 2000}} {
		if x.Add(c.base, c.end, 9) {
			t.Errorf("Add(%d, %d) overlapping a range was accepted", c.base, c.end)
		}
	}
	for _, c := range []struct {
		p, e  uintptr
		shard int
	}{{1000, 1000, 1}, {1999, 2000, 1}, {2000, 2000, 3}, {2500, 3000, 3}, {3000, 4000, 2},
		{999, 1000, -1}, {1500, 2500, -1}, {4000, 4000, -1}, {1500, 1400, -1}} {
		o := x.Find(c.p, c.e)
		if got := -1; o != nil {
			got = int(o.Shard)
			if got != c.shard {
				t.Errorf("Find(%d, %d) = shard %d; want %d", c.p, c.e, got, c.shard)
			}
		} else if c.shard != -1 {
			t.Errorf("Find(%d, %d) = nil; want shard %d", c.p, c.e, c.shard)
		}
	}
	x.Remove(2000)
	x.Remove(12345) // not there: nothing happens
	if x.Len() != 2 {
		t.Fatalf("Len %d after a Remove; want 2", x.Len())
	}
	if x.Find(2500, 2501) != nil || x.Find(1500, 1501) == nil {
		t.Fatal("Remove removed the wrong range")
	}
}
