package checked

import (
	"strings"
	"testing"
)

// holdBlock allocates, frees and holds a block of n bytes at addr, and
// returns its memory and a pointer to how often it was released.
func holdBlock(t *Tracker, addr uintptr, n int) ([]byte, *int) {
	mem := make([]byte, n)
	released := new(int)
	t.Alloc(addr, n, 0)
	rec := t.Free("Put", addr, 0)
	t.Hold("Put", rec, mem, func() { *released++ })
	return mem, released
}

func TestHold_PoisonsAndKeepsTheBlock(t *testing.T) {
	tr := NewTracker("testpool")
	mem, released := holdBlock(tr, 0x1000, 64)
	if i := IndexNot(mem, PoisonByte); i >= 0 {
		t.Fatalf("byte %d of a held block is %#x, not poison", i, mem[i])
	}
	if *released != 0 {
		t.Fatal("a block was released while the quarantine had room")
	}
	if blocks, bytes := tr.Held(); blocks != 1 || bytes != 64 {
		t.Fatalf("Held() = %d blocks, %d bytes; want 1, 64", blocks, bytes)
	}
	// A second free while the block is held is a double free naming both stacks.
	m := misuseOf(func() { tr.Free("Put", 0x1000, 0) })
	if m == nil || m.Kind != DoubleFree || m.Free.Empty() || m.Alloc.Empty() {
		t.Fatalf("second free of a held block: %+v", m)
	}
}

func TestHold_ReleasesOldestPastTheBound(t *testing.T) {
	tr := NewTracker("testpool")
	_, first := holdBlock(tr, 0x1000, QuarantineBytes/2)
	_, second := holdBlock(tr, 0x2000, QuarantineBytes/2)
	if *first != 0 || *second != 0 {
		t.Fatal("released within the byte bound")
	}
	_, third := holdBlock(tr, 0x3000, 1)
	if *first != 1 || *second != 0 || *third != 0 {
		t.Fatalf("past the byte bound released %d, %d, %d; want only the oldest once", *first, *second, *third)
	}
	for i := range QuarantineBlocks {
		holdBlock(tr, uintptr(0x10000+i*16), 1)
	}
	if blocks, _ := tr.Held(); blocks != QuarantineBlocks {
		t.Fatalf("held %d blocks; want the bound %d", blocks, QuarantineBlocks)
	}
	if *second != 1 || *third != 1 {
		t.Fatal("the block bound did not release the oldest blocks")
	}
	tr.Flush("Reset")
	if blocks, bytes := tr.Held(); blocks != 0 || bytes != 0 {
		t.Fatalf("after Flush: %d blocks, %d bytes held", blocks, bytes)
	}
}

func TestHold_WriteAfterFreeIsReported(t *testing.T) {
	tr := NewTracker("testpool")
	mem, released := holdBlock(tr, 0x1000, 64)
	mem[7] = 1
	m := tr.CheckHeld()
	if m == nil || m.Kind != UseAfterFree || m.Addr != 0x1000 || m.Size != 64 || m.Free.Empty() {
		t.Fatalf("CheckHeld after a write to a held block: %+v", m)
	}
	if !strings.Contains(m.Error(), "byte 7 of the freed block is 0x01") {
		t.Fatalf("report %q", m.Error())
	}
	m = misuseOf(func() { tr.Flush("Reset") })
	if m == nil || m.Op != "Reset" || m.Kind != UseAfterFree {
		t.Fatalf("Flush of a written block: %+v", m)
	}
	if *released != 0 {
		t.Fatal("a block whose poison was touched was released")
	}
}

func TestReport_FillsFromTheRecord(t *testing.T) {
	tr := NewTracker("testpool")
	tr.Alloc(0x1000, 32, 0)
	rec := tr.Free("Put", 0x1000, 0)
	m := tr.Report("Get", Overflow, 0x1000, rec, "guard byte 3")
	if m.Allocator != "testpool" || m.Op != "Get" || m.Kind != Overflow || m.Size != 32 || m.Alloc.Empty() || m.Free.Empty() {
		t.Fatalf("Report = %+v", m)
	}
	if m := Report("x", "Put", ForeignFree, 0x10, nil, ""); m.Size != 0 || !m.Alloc.Empty() {
		t.Fatalf("Report without a record = %+v", m)
	}
}
