package checked

import (
	"strings"
	"testing"
)

func TestTracker_FreeRangeSplitsTheRecord(t *testing.T) {
	tr := NewTracker("ranges")
	allocHere(tr, 0x1000) // 64 bytes
	f := tr.FreeRange("Free", 0x1000, 0x1010, 0x1020, 0)
	if f.Addr != 0x1010 || f.Size != 16 || f.Free.Empty() || !strings.Contains(f.Alloc.String(), "checked.allocHere") {
		t.Fatalf("freed record %+v", f)
	}
	live := tr.Live()
	if len(live) != 2 || live[0].Addr != 0x1000 || live[0].Size != 16 || live[1].Addr != 0x1020 || live[1].Size != 32 {
		t.Fatalf("live %+v", live)
	}
	if !strings.Contains(live[1].Alloc.String(), "checked.allocHere") {
		t.Fatal("a piece lost the allocation stack")
	}
	if r := tr.LiveContaining(0x1025); r == nil || r.Addr != 0x1020 {
		t.Fatalf("LiveContaining = %+v", r)
	}
	if r := tr.FreedContaining(0x101f); r != f || tr.FreedContaining(0x1020) != nil {
		t.Fatal("FreedContaining")
	}
	// A later free of the same bytes is found first.
	tr.Alloc(0x1010, 16, 0)
	g := tr.FreeRange("Free", 0x1010, 0x1010, 0x1020, 0)
	if tr.FreedContaining(0x1015) != g {
		t.Fatal("FreedContaining did not return the most recent free")
	}
	// Outside its record: a bug of the caller, not a misuse to report.
	func() {
		defer func() {
			if r, _ := recover().(string); r != "checked: FreeRange outside a live record" {
				t.Fatalf("FreeRange outside its record: panic %v", r)
			}
		}()
		tr.FreeRange("Free", 0x1000, 0x1000, 0x1020, 0)
	}()
	tr.Reset()
	if len(tr.Live()) != 0 || tr.FreedContaining(0x1015) != nil {
		t.Fatal("Reset kept records")
	}
}

func TestTracker_Retire(t *testing.T) {
	tr := NewTracker("ranges")
	s := Callers(0)
	tr.Retire(0x2000, 10, s, 0)
	r := tr.FreedContaining(0x2009)
	if r == nil || r.Alloc != s || r.Free.Empty() || len(tr.Live()) != 0 {
		t.Fatalf("retired record %+v", r)
	}
}
