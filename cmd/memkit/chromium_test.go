package main

import (
	"image"
	"strings"
	"testing"

	"github.com/memkit/memkit/internal/e2e"
)

// renderInChromium loads url in headless Chromium (Debian's chromium
// package; the test skips without it, or fails under MEMKIT_E2E=1) and
// returns a screenshot of a 1200x2000 window onto it and the DOM after the
// page has loaded.
func renderInChromium(t testing.TB, url string) (image.Image, string) {
	t.Helper()
	img := e2e.Screenshot(t, url, 1200, 2000)
	dom := e2e.DumpDOM(t, url)
	if !strings.Contains(dom, "<html") {
		t.Fatalf("chromium --dump-dom printed no document:\n%.2000s", dom)
	}
	return img, dom
}
