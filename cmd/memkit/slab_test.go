package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestSlabWorkloadsRegistered(t *testing.T) {
	want := []string{
		"SlabAllocFree/size=64B/impl=memkit",
		"SlabAllocFree/size=4KiB/impl=memkit-shared",
		"SlabAllocFree/size=512B/impl=syncpool",
		"SlabAllocFree/size=512B/impl=bytepool",
		"SlabAllocFreeParallel/size=4KiB/impl=memkit",
		"SlabChain/size=64MiB/impl=memkit",
		"SlabChain/size=64MiB/impl=heap-chunks",
		"SlabChain/size=64MiB/impl=floor",
		"RingSeed/ops=1000/impl=memkit",
		"RingSeed/ops=1000/impl=memkit-lend",
		"RingSeed/ops=1000/impl=chan",
		"RingSeed/ops=1000/impl=mutex-copy",
		"RingSeed/ops=1000/impl=floor",
	}
	have := map[string]bool{}
	for i := range benches {
		have[benches[i].name()] = true
	}
	for _, name := range want {
		if !have[name] {
			t.Errorf("bench %s is not registered", name)
		}
	}
}

func TestRun_SlabAndRingAllocateNothing(t *testing.T) {
	out, err := runCLI(t, "bench", "--filter", "(SlabAllocFree/size=512B|RingSeed)", "--benchtime", "20x", "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"\nSlabAllocFree/size=512B\n", "\nRingSeed/ops=1000\n"} {
		if !strings.Contains(out, w) {
			t.Fatalf("no %q table:\n%s", strings.TrimSpace(w), out)
		}
	}
	for _, impl := range []string{"memkit", "memkit-shared", "memkit-lend"} {
		if !regexp.MustCompile(`(?m)^  ` + impl + ` +\S+ +\d+ +0 `).MatchString(out) {
			t.Errorf("%s row is not 0 allocs/op:\n%s", impl, out)
		}
	}
}
