package memtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memkit/memkit/internal/checked"
)

// Mistake is one row of an allocator's misuse table: a documented mistake,
// what each build does about it, and a test that makes it.
type Mistake struct {
	Name    string // the safety table's "mistake" cell: "double Put"
	Release string // the safety table's "release build" cell
	Checked string // the safety table's "checked build" cell

	// Panic is the release build's exact panic value, as fmt.Sprint prints
	// it; "" when the release build does not panic.
	Panic string
	// Op and Kind are the checked build's *checked.Misuse Op and Kind;
	// Kind "" when the checked build does as the release build does (panics
	// with Panic, or not at all).
	Op, Kind string

	// Setup builds the state as a user would and returns the mistake, one
	// call that makes it, and intact, which returns an error unless every
	// other live allocation still holds exactly its bytes (nil if there is
	// none to check). intact runs after the mistake whether or not it
	// panicked.
	Setup func(t testing.TB) (mistake func(), intact func() error)
}

// RunMistakes makes each mistake of table in a subtest and checks the build
// in use: a release build panics with exactly Panic (or not at all), the
// checked build (-tags memkitdebug) with a *checked.Misuse of Kind from Op
// (with Kind "", as the release build), and in both every other allocation
// reads back intact.
// It then checks the table against the misuse table of docs/safety.md (see
// [CheckSafetyDoc]).
func RunMistakes(t *testing.T, allocator string, table []Mistake) {
	t.Helper()
	runMistakes(t, allocator, table)
	CheckSafetyDoc(t, allocator, table)
}

// runMistakes is RunMistakes without the check of docs/safety.md.
func runMistakes(t *testing.T, allocator string, table []Mistake) {
	t.Helper()
	for _, row := range table {
		t.Run(row.Name, func(t *testing.T) {
			mistake, intact := row.Setup(t)
			got := recovered(mistake)
			if checked.Enabled && row.Kind != "" {
				checkMisuse(t, allocator, row, got)
			} else {
				checkRelease(t, row, got)
			}
			if intact != nil {
				if err := intact(); err != nil {
					t.Fatalf("after the mistake another allocation changed: %v", err)
				}
			}
		})
	}
}

// panicked is what a call panicked with; ok is false if it returned.
type panicked struct {
	v  any
	ok bool
}

func recovered(f func()) (p panicked) {
	returned := false
	defer func() {
		if !returned {
			p = panicked{v: recover(), ok: true}
		}
	}()
	f()
	returned = true
	return p
}

func checkRelease(t *testing.T, row Mistake, got panicked) {
	t.Helper()
	switch {
	case row.Panic == "" && got.ok:
		t.Fatalf("release build panicked %v; want no panic (%s)", got.v, row.Release)
	case row.Panic != "" && !got.ok:
		t.Fatalf("release build did not panic; want %q", row.Panic)
	case row.Panic != "" && fmt.Sprint(got.v) != row.Panic:
		t.Fatalf("release build panicked %q; want %q", fmt.Sprint(got.v), row.Panic)
	}
}

func checkMisuse(t *testing.T, allocator string, row Mistake, got panicked) {
	t.Helper()
	m, _ := got.v.(*checked.Misuse)
	switch {
	case m == nil:
		t.Fatalf("checked build panicked %v (ok %v); want a *checked.Misuse %q from %s", got.v, got.ok, row.Kind, row.Op)
	case m.Allocator != allocator || m.Op != row.Op || m.Kind != row.Kind:
		t.Fatalf("misuse %s/%s/%q; want %s/%s/%q\n%v", m.Allocator, m.Op, m.Kind, allocator, row.Op, row.Kind, m)
	case !strings.HasPrefix(m.Error(), fmt.Sprintf("memkit/%s: %s: %s at ", allocator, row.Op, row.Kind)):
		t.Fatalf("report %q", m.Error())
	case (m.Kind == checked.DoubleFree || m.Kind == checked.UseAfterFree) && (m.Alloc.Empty() || m.Free.Empty()):
		t.Fatalf("a %s report without the allocation and the first free's stacks:\n%v", m.Kind, m)
	}
}

// SafetyDoc is the page, relative to the core module's root, whose misuse
// table lies between the two marker lines.
const (
	SafetyDoc  = "docs/safety.md"
	tableBegin = "<!-- misuse table: generated from each package's TestMistakes; memtest.CheckSafetyDoc keeps them equal -->"
	tableEnd   = "<!-- end of misuse table -->"
)

// SafetyRow formats row as the misuse table of docs/safety.md shows it.
func SafetyRow(allocator string, row Mistake) string {
	return fmt.Sprintf("| %s | %s | %s | %s |", allocator, row.Name, row.Release, row.Checked)
}

// CheckSafetyDoc fails t unless the misuse table of docs/safety.md (under
// the module root, found upward from the test's directory) holds exactly
// table's rows for allocator, in the same order. A module without that
// page (a copy outside the repository) is not checked; a page without the
// table's markers fails.
//
// To regenerate the table, run the tests with MEMKIT_MISUSE_ROWS set to a
// directory: each allocator writes its rows to <allocator>.md there.
//
//	MEMKIT_MISUSE_ROWS=/tmp/rows go test -run TestMistakes ./...
func CheckSafetyDoc(t testing.TB, allocator string, table []Mistake) {
	t.Helper()
	want := make([]string, len(table))
	for i, row := range table {
		want[i] = SafetyRow(allocator, row)
	}
	if dir := os.Getenv("MEMKIT_MISUSE_ROWS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, allocator+".md"), []byte(strings.Join(want, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text, ok := safetyDoc()
	if !ok {
		return
	}
	_, rest, ok1 := strings.Cut(text, tableBegin)
	body, _, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no misuse table between the lines\n%s\n%s", SafetyDoc, tableBegin, tableEnd)
	}
	var have []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "| "+allocator+" | ") {
			have = append(have, line)
		}
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Errorf(SafetyDoc+"'s misuse table differs from %s's TestMistakes; its %s rows should read:\n%s\n\nthey read:\n%s",
			allocator, allocator, strings.Join(want, "\n"), strings.Join(have, "\n"))
	}
}

// safetyDoc returns the text of docs/safety.md under the nearest directory
// at or above the working directory that has a go.mod.
func safetyDoc() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(SafetyDoc)))
			return string(b), err == nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
