// Package e2e runs memkit's end-to-end tests against system programs:
// headless Chromium for pages, Prometheus for the collector.
//
// A test asks for a program with [Program]. When the program is missing the
// test is skipped with a line that says what to install, so the README's
// test command passes on a machine with only Go; when MEMKIT_E2E=1 (set by
// .ci/run, which installs the programs first) a missing program fails the
// test instead, so CI cannot pass by skipping.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Required reports whether end-to-end tests must run: MEMKIT_E2E=1.
func Required() bool { return os.Getenv("MEMKIT_E2E") == "1" }

// Program returns the path of the first of names found on PATH or as an
// absolute path. If none is found it skips t, saying which Debian package
// provides it, or fails t when [Required].
func Program(t testing.TB, pkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s not installed (looked for %s); apt-get install %s to run this end-to-end test",
		pkg, strings.Join(names, ", "), pkg)
	if Required() {
		t.Fatal(msg + " (MEMKIT_E2E=1: end-to-end tests must run)")
	}
	t.Skip(msg)
	return ""
}

// Chromium returns the path of Debian's chromium, under [Program]'s rule.
func Chromium(t testing.TB) string {
	t.Helper()
	return Program(t, "chromium", "chromium", "chromium-browser", "google-chrome")
}

// chromiumFlags start Chromium headless and quiet on a closed network: the
// background-networking flags stop it from dialling Google's hosts, which a
// sandboxed machine refuses, many at a time.
var chromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
	"--no-first-run", "--disable-background-networking",
	"--disable-component-update", "--disable-sync", "--hide-scrollbars",
}

// runChromium runs Chromium with a fresh profile and the given arguments,
// bounded to a minute, and returns its standard output.
func runChromium(t testing.TB, args ...string) []byte {
	t.Helper()
	bin := Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all := append(append([]string{}, chromiumFlags...), "--user-data-dir="+t.TempDir())
	cmd := exec.CommandContext(ctx, bin, append(all, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Chromium's helper processes may hold the output pipes open after the
	// browser process is killed; do not wait on them for long.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after a minute: %w", err)
		}
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	return stdout.Bytes()
}

// DumpDOM loads url in headless Chromium and returns the DOM it built.
func DumpDOM(t testing.TB, url string) string {
	t.Helper()
	return string(runChromium(t, "--dump-dom", url))
}

// Screenshot loads url in headless Chromium in a window of w×h pixels and
// returns the decoded screenshot.
func Screenshot(t testing.TB, url string, w, h int) image.Image {
	t.Helper()
	file := filepath.Join(t.TempDir(), "shot.png")
	runChromium(t, "--screenshot="+file, fmt.Sprintf("--window-size=%d,%d", w, h), url)
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding chromium's screenshot: %v", err)
	}
	return img
}

// Ink returns the fraction of img's pixels that differ from its top-left
// pixel (the page background) and the number of distinct colours: a blank
// page has 0 and 1.
func Ink(img image.Image) (fraction float64, colours int) {
	b := img.Bounds()
	bg := img.At(b.Min.X, b.Min.Y)
	br, bgG, bb, ba := bg.RGBA()
	seen := make(map[[4]uint32]bool)
	var ink int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			if len(seen) < 1<<16 {
				seen[[4]uint32{r, g, bl, a}] = true
			}
			if r != br || g != bgG || bl != bb || a != ba {
				ink++
			}
		}
	}
	return float64(ink) / float64(b.Dx()*b.Dy()), len(seen)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
