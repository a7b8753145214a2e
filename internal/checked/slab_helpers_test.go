package checked

import (
	"strings"
	"testing"
)

func captureHere() Stack { return Callers(0) }

func TestTrimPkg(t *testing.T) {
	s := captureHere()
	if !strings.HasPrefix(s.String(), "\tgithub.com/memkit/memkit/internal/checked.captureHere\n") {
		t.Fatalf("stack:\n%s", s.String())
	}
	// This test is in package checked too: trimming it starts the stack at
	// its caller, the testing package.
	if got := TrimPkg(s, "github.com/memkit/memkit/internal/checked"); !strings.HasPrefix(got.String(), "\ttesting.tRunner\n") {
		t.Fatalf("trimmed:\n%s", got.String())
	}
	if got := TrimPkg(s, "github.com/memkit/memkit/internal/check"); got.String() != s.String() {
		t.Fatalf("a prefix of the path trimmed frames:\n%s", got.String())
	}
	var empty Stack
	if got := TrimPkg(empty, "x"); !got.Empty() {
		t.Fatal("empty stack")
	}
}

func TestIndexNot(t *testing.T) {
	for n := range 40 {
		b := make([]byte, n)
		Fill(b, PoisonByte)
		if i := IndexNot(b, PoisonByte); i != -1 {
			t.Fatalf("n=%d: IndexNot = %d on all poison", n, i)
		}
		for k := range n {
			b[k] = 1
			if i := IndexNot(b, PoisonByte); i != k {
				t.Fatalf("n=%d: IndexNot = %d; want %d", n, i, k)
			}
			b[k] = PoisonByte
		}
	}
}
