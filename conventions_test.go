package memkit_test

import (
	"go/ast"
	"go/doc"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// This file checks two conventions across the repository's packages, as
// go vet and go test see them, rather than trusting each package to
// remember: types documented as not to be copied are ones go vet's
// copylocks check catches a copy of, and Examples that print have their
// output checked.

// goDirs returns every directory under root holding .go files, skipping
// testdata and hidden directories, relative to root. With modules true it
// also descends into nested modules (cmd/memkit, prom, ...).
func goDirs(t *testing.T, root string, modules bool) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if path != root && !modules {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if m, _ := filepath.Glob(filepath.Join(path, "*.go")); len(m) > 0 {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// noCopyDoc matches a type comment that forbids copies (after first use or
// at all): "must not be copied", "may be copied only before its first use".
var noCopyDoc = regexp.MustCompile(`(?:must|may) not be copied|may be copied only before|and not copied`)

// awaitingNoCopy lists the types documented as not to be copied whose
// copies go vet does not catch yet. Each needs, as its first field,
//
//	_ [0]sync.Mutex // go vet: must not be copied after first use
//
// (zero bytes; go vet's copylocks check then reports a copy, as it does for
// a sync.Mutex). Remove a type from this list when it gets the field: the
// test fails while a listed type is already checked, so the list only
// shrinks.
var awaitingNoCopy = []string{}

// TestNoCopyTypesAreVetChecked type-checks every package of the core module
// (not the other modules: grpcpool's types need the same check) and, for
// each type whose doc says it must not be copied, checks that go
// vet's copylocks check would report a copy: the type (or an array of it)
// is a struct holding, at any depth, a field whose pointer has Lock and
// Unlock methods and whose value does not (sync.Mutex, atomic.Int64, a
// [0]sync.Mutex, ...).
func TestNoCopyTypesAreVetChecked(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks every package from source")
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "source", nil)
	var documented, unchecked []string
	for _, dir := range goDirs(t, ".", false) {
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range pkgs {
			if name == "main" {
				continue
			}
			path := filepath.ToSlash(dir) // names the type: slab.Arena, compat/goslab.Arena
			var want []*ast.TypeSpec
			for _, f := range p.Files {
				for _, d := range f.Decls {
					g, ok := d.(*ast.GenDecl)
					if !ok || g.Tok != token.TYPE {
						continue
					}
					for _, s := range g.Specs {
						ts := s.(*ast.TypeSpec)
						text := ts.Doc.Text() + g.Doc.Text()
						if ts.Name.IsExported() && noCopyDoc.MatchString(strings.Join(strings.Fields(text), " ")) {
							want = append(want, ts)
						}
					}
				}
			}
			if len(want) == 0 {
				continue
			}
			files := slices.Collect(mapValues(p.Files))
			conf := types.Config{Importer: imp.(types.ImporterFrom), Error: func(error) {}}
			pkg, _ := conf.Check(dir, fset, files, nil)
			for _, ts := range want {
				qual := path + "." + ts.Name.Name
				documented = append(documented, qual)
				obj := pkg.Scope().Lookup(ts.Name.Name)
				if obj == nil || !vetSeesLock(obj.Type(), map[types.Type]bool{}) {
					unchecked = append(unchecked, qual)
				}
			}
		}
	}
	if len(documented) < 5 {
		t.Fatalf("found only %d types documented as not to be copied: %q", len(documented), documented)
	}
	for _, q := range unchecked {
		if !slices.Contains(awaitingNoCopy, q) {
			t.Errorf("%s is documented as not to be copied, but go vet does not catch a copy: give it a first field _ [0]sync.Mutex", q)
		}
	}
	for _, q := range awaitingNoCopy {
		if slices.Contains(documented, q) && !slices.Contains(unchecked, q) {
			t.Errorf("%s is now checked by go vet: remove it from awaitingNoCopy", q)
		}
	}
	t.Logf("documented as not to be copied: %q; not yet caught by go vet: %q", documented, unchecked)
}

func mapValues[K comparable, V any](m map[K]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

var lockerType = types.NewInterfaceType([]*types.Func{
	types.NewFunc(token.NoPos, nil, "Lock", types.NewSignatureType(nil, nil, nil, nil, nil, false)),
	types.NewFunc(token.NoPos, nil, "Unlock", types.NewSignatureType(nil, nil, nil, nil, nil, false)),
}, nil).Complete()

// vetSeesLock reports whether go vet's copylocks check reports a copy of a
// value of type typ: the rule it applies, restated.
func vetSeesLock(typ types.Type, seen map[types.Type]bool) bool {
	if seen[typ] {
		return false
	}
	seen[typ] = true
	for {
		a, ok := typ.Underlying().(*types.Array)
		if !ok {
			break
		}
		typ = a.Elem()
	}
	st, ok := typ.Underlying().(*types.Struct)
	if !ok {
		return false
	}
	if types.Implements(types.NewPointer(typ), lockerType) && !types.Implements(typ, lockerType) {
		return true
	}
	for i := range st.NumFields() {
		if vetSeesLock(st.Field(i).Type(), seen) {
			return true
		}
	}
	return false
}

// printCall matches the calls that make an Example print.
var printCall = regexp.MustCompile(`^(fmt\.Print|fmt\.Printf|fmt\.Println|println|print)$`)

// TestExamplesCheckOutput lists every Example of every module, as go test
// finds them, and fails for one that prints but whose output go test does
// not check: no "// Output:" comment, or one go test does not see (it must
// be the last comment of the body, in a comment group of its own).
func TestExamplesCheckOutput(t *testing.T) {
	fset := token.NewFileSet()
	examples := 0
	for _, dir := range goDirs(t, ".", true) {
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			files := slices.Collect(mapValues(p.Files))
			for _, ex := range doc.Examples(files...) {
				examples++
				where := fset.Position(ex.Code.Pos()).String()
				prints := false
				ast.Inspect(ex.Code, func(n ast.Node) bool {
					if c, ok := n.(*ast.CallExpr); ok && printCall.MatchString(exprString(c.Fun)) {
						prints = true
					}
					return !prints
				})
				checked := ex.Output != "" || ex.EmptyOutput
				if prints && !checked {
					t.Errorf("Example%s (%s) prints, but go test checks no output: end its body with a // Output: comment group of its own", ex.Name, where)
				}
				if !checked && hasOutputComment(ex) {
					t.Errorf("Example%s (%s) has an Output comment go test does not see: it must be the body's last comment, in a group of its own", ex.Name, where)
				}
			}
		}
	}
	if examples < 10 {
		t.Fatalf("found only %d examples", examples)
	}
}

func hasOutputComment(ex *doc.Example) bool {
	for _, c := range ex.Comments {
		if strings.Contains(c.Text(), "Output:") {
			return true
		}
	}
	return false
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return ""
}
