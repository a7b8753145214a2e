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

func TestFillFirstNot(t *testing.T) {
	for _, n := range []int{0, 1, 7, 64, 1000} {
		b := make([]byte, n)
		Fill(b, PoisonByte)
		if i := FirstNot(b, PoisonByte); i != -1 {
			t.Fatalf("n=%d: byte %d not poisoned", n, i)
		}
		if n > 3 {
			b[3] = 0
			if i := FirstNot(b, PoisonByte); i != 3 {
				t.Fatalf("FirstNot = %d; want 3", i)
			}
		}
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
