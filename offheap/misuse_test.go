//go:build memkitdebug

package offheap_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/offheap"
)

// The misuse suite of the checked build: one test per mistake, each
// asserting the report. A mapping has no handle apart from the slice
// itself, so there is no stale-handle mistake to make. Writes after free
// and past the end are not the checked build's to catch here: freed memory
// is unmapped, and guard pages (guard_test.go, both builds) make both
// fault at once.

// checkMisuse fails t unless free, a bad Free, panics with a report of
// kind, with the stacks that explain it: where the mapping was allocated
// (by the test function named test, if not ""), and, with freed, where it
// was first freed.
func checkMisuse(t *testing.T, free func(), kind, test string, freed bool) {
	t.Helper()
	m, _ := memtest.MisuseOf(free)
	memtest.CheckMisuse(t, m, "offheap", "Free", kind, test, freed)
}

// allocators are the package-level functions' allocator and a guarded
// one.
func allocators(t *testing.T) map[string]*offheap.Allocator {
	return map[string]*offheap.Allocator{"default": offheap.Default(), "guarded": newGuarded(t)}
}

func TestMisuse_DoubleFree(t *testing.T) {
	for name, a := range allocators(t) {
		t.Run(name, func(t *testing.T) {
			b, _ := a.Alloc(100)
			if err := a.Free(b); err != nil {
				t.Fatal(err)
			}
			checkMisuse(t, func() { _ = a.Free(b) }, checked.DoubleFree, "TestMisuse_DoubleFree", true)
		})
	}
}

func TestMisuse_ForeignFree(t *testing.T) {
	checkMisuse(t, func() { _ = offheap.Free(make([]byte, 10)) }, checked.ForeignFree, "", false)
	g := newGuarded(t)
	b, _ := g.Alloc(10)
	// Another allocator's mapping: named with its allocation stack.
	m, _ := memtest.MisuseOf(func() { _ = offheap.Free(b) })
	memtest.CheckMisuse(t, m, "offheap", "Free", checked.ForeignFree, "TestMisuse_ForeignFree", false)
	if !strings.Contains(m.Detail, "another Allocator") {
		t.Errorf("detail %q", m.Detail)
	}
	_ = g.Free(b)
}

func TestMisuse_MovedStart(t *testing.T) {
	for name, a := range allocators(t) {
		t.Run(name, func(t *testing.T) {
			b, _ := a.Alloc(2 * offheap.PageSize())
			for _, moved := range [][]byte{b[1:], b[offheap.PageSize():]} {
				checkMisuse(t, func() { _ = a.Free(moved) }, checked.MovedFree, "TestMisuse_MovedStart", false)
			}
			if err := a.Free(b); err != nil { // unchanged by the reports
				t.Fatal(err)
			}
		})
	}
}

func TestMisuse_Leak(t *testing.T) {
	for name, a := range allocators(t) {
		t.Run(name, func(t *testing.T) {
			before, err := memkit.Leaks(a)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := a.Alloc(100)
			leaks, _ := memkit.Leaks(a)
			if len(leaks) != len(before)+1 {
				t.Fatalf("%d leaks; want %d", len(leaks), len(before)+1)
			}
			var found bool
			for _, l := range leaks {
				if l.Addr == addr(b) {
					found = l.Allocator == "offheap" && l.Size == 100 &&
						strings.Contains(l.String(), "allocated at:\n\tgithub.com/memkit/memkit/offheap_test.TestMisuse_Leak")
				}
			}
			if !found {
				t.Fatalf("leak of %#x not reported: %v", addr(b), leaks)
			}
			_ = a.Free(b)
			if leaks, _ := memkit.Leaks(a); len(leaks) != len(before) {
				t.Fatalf("leaks after Free: %v", leaks)
			}
		})
	}
}

// A freed mapping waits in the quarantine, still mapped: a new Alloc cannot
// take its address, so a late second Free is a double free, not the free of
// the new mapping, and a write into it is reported by memkit.Leaks.
func TestMisuse_QuarantineKeepsAddresses(t *testing.T) {
	a := offheap.Default()
	b, _ := a.Alloc(100)
	if err := a.Free(b); err != nil {
		t.Fatal(err)
	}
	fresh, _ := a.Alloc(100)
	defer func() { _ = a.Free(fresh) }()
	if addr(fresh) == addr(b) {
		t.Fatal("a new mapping took the address of one in quarantine")
	}
	checkMisuse(t, func() { _ = a.Free(b) }, checked.DoubleFree, "TestMisuse_QuarantineKeepsAddresses", true)
	b[5] = 1
	_, err := memkit.Leaks(a)
	var m *memkit.Misuse
	if !errors.As(err, &m) || m.Kind != checked.UseAfterFree || m.Addr != addr(b) {
		t.Fatalf("Leaks after a write into a freed mapping: %v", err)
	}
	b[5] = checked.PoisonByte // leave the quarantine whole for the tests after this one
}
