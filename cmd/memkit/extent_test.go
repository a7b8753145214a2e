package main

import (
	"regexp"
	"strings"
	"testing"
)

// The Shared extent allocator's rows, serial (memkit-shared) and on every
// P (ExtentMallocFreeParallel's memkit), run and allocate nothing: at
// 5000 ops, where the first use's blocks (a Go heap allocation per shard)
// round away, as they do not at 20.
func TestRun_ExtentSharedAllocatesNothing(t *testing.T) {
	out, err := runCLI(t, "bench", "--filter", "^ExtentMallocFree(Parallel)?/size=4KiB/impl=memkit", "--benchtime", "5000x", "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"ExtentMallocFree/size=4KiB", "ExtentMallocFreeParallel/size=4KiB"} {
		_, table, ok := strings.Cut(out, "\n"+w+"\n")
		if !ok {
			t.Fatalf("no %s table:\n%s", w, out)
		}
		table, _, _ = strings.Cut(table, "\n\n")
		for _, impl := range []string{"memkit", "memkit-shared"} {
			if w == "ExtentMallocFreeParallel/size=4KiB" && impl != "memkit" {
				continue // the parallel workload's memkit is the Shared
			}
			if !regexp.MustCompile(`(?m)^  ` + impl + ` +\S+ +\d+ +0 `).MatchString(table) {
				t.Errorf("%s: %s row is not 0 allocs/op:\n%s", w, impl, table)
			}
		}
	}
}
