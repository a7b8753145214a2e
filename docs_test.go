package memkit_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// This file keeps the README and the pages under docs/ true where a test
// can tell: every relative link points at a file that exists (and at a
// heading of it when it names one), the README stays a front page, and its
// Go blocks are Example tests (so they compile and their output is
// checked). The misuse table in docs/safety.md is checked by each
// package's TestMistakes (internal/memtest.CheckSafetyDoc).

// docPages returns the Markdown pages whose links are checked.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "ARCHITECTURE.md", "CHANGELOG.md"}
	more, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Fatal("no pages under docs/")
	}
	return append(pages, more...)
}

// mdLink matches an inline Markdown link and captures its target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// codeSpan matches an inline code span, whose text is no link.
var codeSpan = regexp.MustCompile("`[^`]*`")

// prose returns text without its fenced code blocks and code spans,
// line for line.
func prose(text string) []string {
	var lines []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			lines = append(lines, "")
			continue
		}
		if fenced {
			lines = append(lines, "")
			continue
		}
		lines = append(lines, codeSpan.ReplaceAllString(line, "``"))
	}
	return lines
}

// anchors returns the anchors GitHub gives the headings of a Markdown
// text: the heading's text, links and code marks removed, lower-cased,
// with every character but letters, digits, '-' and '_' dropped and
// spaces made hyphens; a repeated anchor gets "-1", "-2", ...
func anchors(text string) map[string]bool {
	set := make(map[string]bool)
	seen := make(map[string]int)
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		title = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(title, "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a = a + "-" + string(rune('0'+n))
		} else {
			seen[a] = 1
		}
		set[a] = true
	}
	return set
}

func TestDocs_RelativeLinksResolve(t *testing.T) {
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range prose(string(text)) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
				}
				where := page + ":" + itoa(i+1)
				body, err := os.ReadFile(path)
				if err != nil {
					if info, serr := os.Stat(path); serr == nil && info.IsDir() && anchor == "" {
						continue
					}
					t.Errorf("%s: link %q: no file %s", where, target, path)
					continue
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(path, ".md") {
					t.Errorf("%s: link %q: an anchor into a file that is not Markdown", where, target)
					continue
				}
				if !anchors(string(body))[anchor] {
					t.Errorf("%s: link %q: %s has no heading with anchor #%s", where, target, path, anchor)
				}
			}
		}
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// TestDocs_ReadmeIsAFrontPage keeps the README short enough to read in five
// minutes; the manual belongs under docs/.
func TestDocs_ReadmeIsAFrontPage(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > 250 {
		t.Errorf("README.md has %d lines; a front page has at most 250: move the detail to a page under docs/", n)
	}
	for _, cmd := range []string{"./scripts/test", "go -C cmd/memkit run . bench"} {
		if !strings.Contains(string(text), cmd) {
			t.Errorf("README.md does not show the command %q", cmd)
		}
	}
}

// TestDocs_GoBlocksAreExamples checks that every Go block of the README and
// of docs/tour.md is, line for line (indentation aside), part of an
// Example test of the repository, so that it compiles and prints what it
// says.
func TestDocs_GoBlocksAreExamples(t *testing.T) {
	var examples []string
	for _, dir := range goDirs(t, ".", true) {
		files, _ := filepath.Glob(filepath.Join(dir, "*example*_test.go"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			examples = append(examples, trimLines(string(b)))
		}
	}
	for _, page := range []string{"README.md", filepath.Join("docs", "tour.md")} {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range goBlocks(string(text)) {
			want := trimLines(block)
			found := false
			for _, ex := range examples {
				if strings.Contains("\n"+ex+"\n", "\n"+want+"\n") {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: this Go block is in no Example test; copy it from one:\n%s", page, block)
			}
		}
	}
}

// goBlocks returns the bodies of text's ```go blocks.
func goBlocks(text string) []string {
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == "```go":
			in, cur = true, nil
		case in && trimmed == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// trimLines trims each line of s and drops the empty ones.
func trimLines(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestDocs_EveryPageIsLinked checks that every page under docs/ can be
// reached from the README by following relative links, so that no page of
// the manual is left where a reader cannot find it.
func TestDocs_EveryPageIsLinked(t *testing.T) {
	reached := map[string]bool{"README.md": true}
	queue := []string{"README.md"}
	for len(queue) > 0 {
		page := queue[0]
		queue = queue[1:]
		text, err := os.ReadFile(page)
		if err != nil {
			continue
		}
		for _, line := range prose(string(text)) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				file, _, _ := strings.Cut(m[1], "#")
				if file == "" || strings.Contains(file, "://") || !strings.HasSuffix(file, ".md") {
					continue
				}
				target := filepath.Join(filepath.Dir(page), file)
				if !reached[target] {
					reached[target] = true
					queue = append(queue, target)
				}
			}
		}
	}
	for _, page := range docPages(t) {
		if !reached[page] {
			t.Errorf("%s is linked from no page the README leads to", page)
		}
	}
}
