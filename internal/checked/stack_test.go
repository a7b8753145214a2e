package checked

import (
	"strings"
	"testing"
)

// allocDeep records an allocation two frames inside this package, as an
// allocator's Get records it from a helper of its own.
func allocDeep(t *Tracker, addr uintptr) { allocDeeper(t, addr) }
func allocDeeper(t *Tracker, addr uintptr) {
	t.Alloc(addr, 8, SkipWithin("github.com/memkit/memkit/internal/checked"))
}

func TestSkipWithin_StartsAtTheCaller(t *testing.T) {
	tr := NewTracker("x")
	func() { allocDeep(tr, 0x10) }() // the first frame outside the package
	st := tr.Lookup(0x10).Alloc.String()
	if !strings.HasPrefix(st, "\ttesting.tRunner") {
		// The test itself is in package checked, so it is skipped too:
		// the stack starts at the test runner.
		t.Fatalf("stack:\n%s", st)
	}
	if !within("a/b.F", "a/b") || within("a/b_test.F", "a/b") || within("a/bc.F", "a/b") || within("a/b", "a/b") {
		t.Fatal("within")
	}
}

func captureHere() Stack { return Callers(0) }

// captureTrimmed captures, as an allocator does, a stack that starts at the
// first frame outside this package.
func captureTrimmed() Stack {
	return Callers(SkipWithin("github.com/memkit/memkit/internal/checked"))
}

func TestCallers_SkipWithin(t *testing.T) {
	s := captureHere()
	if !strings.HasPrefix(s.String(), "\tgithub.com/memkit/memkit/internal/checked.captureHere\n") {
		t.Fatalf("stack:\n%s", s.String())
	}
	// This test is in package checked too: the trimmed stack starts at its
	// caller, the testing package.
	if got := func() Stack { return captureTrimmed() }(); !strings.HasPrefix(got.String(), "\ttesting.tRunner\n") {
		t.Fatalf("trimmed:\n%s", got.String())
	}
	if SkipWithin("github.com/memkit/memkit/internal/check") != 0 {
		t.Fatal("a prefix of the path counted frames")
	}
}
