package memtest

import (
	"errors"
	"strings"
	"testing"

	"github.com/memkit/memkit/internal/checked"
)

// fakeRows is a table for an allocator "fake" whose double free panics in
// both builds and whose write after free panics in neither.
func fakeRows(releasePanic string, damage bool) []Mistake {
	return []Mistake{{
		Name: "double free", Release: "panic", Checked: "DoubleFree",
		Panic: "memkit/fake: double free", Op: "Free", Kind: checked.DoubleFree,
		Setup: func(testing.TB) (func(), func() error) {
			other := []byte{1, 2, 3}
			return func() {
					if checked.Enabled {
						tr := checked.NewTracker("fake")
						tr.Alloc(0x10, 3, 0)
						rec := tr.Free("Free", 0x10, 0)
						panic(tr.Report("Free", checked.DoubleFree, 0x10, rec, ""))
					}
					if damage {
						other[1] = 9
					}
					panic(releasePanic)
				}, func() error {
					if other[1] != 2 {
						return errors.New("other block changed")
					}
					return nil
				}
		},
	}, {
		Name: "write after free", Release: "not caught", Checked: "not caught",
		Setup: func(testing.TB) (func(), func() error) { return func() {}, nil },
	}}
}

func TestRunMistakes_PassesAMatchingTable(t *testing.T) {
	runMistakes(t, "fake", fakeRows("memkit/fake: double free", false))
}

func TestRunMistakes_FailsAWrongPanicOrDamage(t *testing.T) {
	if checked.Enabled {
		t.Skip("the release-build checks")
	}
	for name, rows := range map[string][]Mistake{
		"wrong panic": fakeRows("memkit/fake: something else", false),
		"damage":      fakeRows("memkit/fake: double free", true),
	} {
		ft := &testing.T{}
		done := make(chan struct{})
		go func() { // Fatal ends the goroutine, as in a real test
			defer close(done)
			runRow(ft, rows[0])
		}()
		<-done
		if !ft.Failed() {
			t.Errorf("%s: the table check passed", name)
		}
	}
}

// runRow is RunMistakes's check of one row, outside t.Run.
func runRow(t *testing.T, row Mistake) {
	mistake, intact := row.Setup(t)
	checkRelease(t, row, recovered(mistake))
	if err := intact(); err != nil {
		t.Fatalf("%v", err)
	}
}

func TestRecovered(t *testing.T) {
	if p := recovered(func() {}); p.ok {
		t.Fatal("a return counted as a panic")
	}
	if p := recovered(func() { panic("x") }); !p.ok || p.v != "x" {
		t.Fatalf("recovered = %+v", p)
	}
}

func TestSafetyRow(t *testing.T) {
	got := SafetyRow("fake", fakeRows("", false)[1])
	if got != "| fake | write after free | not caught | not caught |" {
		t.Fatal(got)
	}
	if !strings.HasPrefix(tableBegin, "<!--") {
		t.Fatal("the table marker is no HTML comment")
	}
}
