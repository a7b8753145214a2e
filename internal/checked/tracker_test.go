package checked

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

func allocHere(t *Tracker, addr uintptr) { t.Alloc(addr, 64, 0) }
func freeHere(t *Tracker, addr uintptr)  { t.Free("Put", addr, 0) }

func misuseOf(f func()) (m *Misuse) {
	defer func() { m, _ = recover().(*Misuse) }()
	f()
	return nil
}

func TestTracker_DoubleFreeNamesBothStacks(t *testing.T) {
	tr := NewTracker("testpool")
	allocHere(tr, 0x1000)
	freeHere(tr, 0x1000)
	m := misuseOf(func() { tr.Free("Put", 0x1000, 0) })
	if m == nil {
		t.Fatal("second free did not panic with a *Misuse")
	}
	if m.Kind != DoubleFree || m.Op != "Put" || m.Allocator != "testpool" || m.Addr != 0x1000 || m.Size != 64 {
		t.Fatalf("misuse %+v", m)
	}
	msg := m.Error()
	for _, want := range []string{
		"memkit/testpool: Put: double free at 0x1000 (64 bytes)\n",
		"allocated at:\n\tgithub.com/memkit/memkit/internal/checked.allocHere\n",
		"first freed at:\n\tgithub.com/memkit/memkit/internal/checked.freeHere\n",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("report lacks %q:\n%s", want, msg)
		}
	}
}

func TestTracker_ForeignFree(t *testing.T) {
	tr := NewTracker("testpool")
	m := misuseOf(func() { tr.Free("Put", 0x2000, 0) })
	if m == nil || m.Kind != ForeignFree || !m.Alloc.Empty() {
		t.Fatalf("misuse %+v", m)
	}
	if got := m.Error(); got != "memkit/testpool: Put: free of memory this allocator did not hand out at 0x2000\n" {
		t.Fatalf("report %q", got)
	}
}

func TestTracker_LiveAndReuse(t *testing.T) {
	tr := NewTracker("testpool")
	allocHere(tr, 0x3000)
	allocHere(tr, 0x1000)
	freeHere(tr, 0x1000)
	allocHere(tr, 0x1000) // reused: live again, no longer freed
	if tr.Freed(0x1000) != nil {
		t.Fatal("a reused address is still listed as freed")
	}
	live := tr.Live()
	if len(live) != 2 || live[0].Addr != 0x1000 || live[1].Addr != 0x3000 {
		t.Fatalf("live %+v", live)
	}
	if !strings.Contains(live[0].Alloc.String(), "checked.allocHere") {
		t.Fatalf("stack %s", live[0].Alloc.String())
	}
}

func TestTracker_ForgetsOldFrees(t *testing.T) {
	tr := NewTracker("testpool")
	for a := uintptr(1); a <= keepFreed+10; a++ {
		tr.Alloc(a, 1, 0)
		tr.Free("Put", a, 0)
	}
	if len(tr.freed) != keepFreed || tr.Freed(1) != nil || tr.Freed(keepFreed+10) == nil {
		t.Fatalf("freed table holds %d", len(tr.freed))
	}
}

type owner struct{ _ [16]byte }

func TestRegister_DroppedWithOwner(t *testing.T) {
	o := new(owner)
	tr := NewTracker("x")
	Register(o, tr)
	if TrackerOf(o) != tr || TrackerOf(new(owner)) != nil || TrackerOf(nil) != nil {
		t.Fatal("TrackerOf")
	}
	o = nil
	for i := 0; i < 50; i++ {
		runtime.GC()
		n := 0
		trackers.Range(func(_, v any) bool {
			if v == tr {
				n++
			}
			return true
		})
		if n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the tracker of a collected owner is still registered")
}

func TestTracker_RingKeepsARefreedAddress(t *testing.T) {
	tr := NewTracker("testpool")
	tr.Alloc(7, 1, 0)
	tr.Free("Put", 7, 0) // the oldest entry of the ring
	for a := uintptr(100); a < 100+keepFreed-1; a++ {
		tr.Alloc(a, 1, 0)
		tr.Free("Put", a, 0)
	}
	tr.Alloc(7, 1, 0)
	tr.Free("Put", 7, 0) // freed again: the ring is full now
	tr.Alloc(1, 1, 0)
	tr.Free("Put", 1, 0) // evicts the first free of 7, not the second
	if r := tr.Freed(7); r == nil {
		t.Fatal("evicting an address's old free forgot its newer one")
	}
	m := misuseOf(func() { tr.Free("Put", 7, 0) })
	if m == nil || m.Kind != DoubleFree {
		t.Fatalf("double free after the ring wrapped: %+v", m)
	}
}

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
