package main

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// memkit bench names each run whose threads waited on a run queue for
// more than busyShare of its time, and no other.
func TestWriteBusyNotes(t *testing.T) {
	bn := &bench{workload: "ExtentMallocFreeParallel/size=64KiB", impl: "memkit"}
	rs := []result{{bench: bn, waits: []runWait{
		{waited: 10 * time.Millisecond, wall: time.Second},              // 1%: an idle machine
		{waited: 900 * time.Millisecond, wall: time.Second},             // 90%: a busy one
		{waited: 200 * time.Millisecond, wall: time.Second},             // at busyShare: not over it
		{waited: 201 * time.Millisecond, wall: 1000 * time.Millisecond}, // just over
	}}}
	var w strings.Builder
	writeBusyNotes(&w, rs)
	lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
	want := []string{
		"memkit bench: ExtentMallocFreeParallel/size=64KiB/impl=memkit run 2 of 4 waited 900ms on a run queue in 1s (90%): another process held a CPU, so its figure measures the machine's load; run it again on an idle machine",
		"memkit bench: ExtentMallocFreeParallel/size=64KiB/impl=memkit run 4 of 4 waited 201ms on a run queue in 1s (20%): another process held a CPU, so its figure measures the machine's load; run it again on an idle machine",
	}
	if len(lines) != len(want) {
		t.Fatalf("notes:\n%s\nwant:\n%s", w.String(), strings.Join(want, "\n"))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("note %d:\n%s\nwant:\n%s", i, lines[i], want[i])
		}
	}
}

// On Linux runQueueWait reads the threads' waits, which never go back
// while the threads live.
func TestRunQueueWait(t *testing.T) {
	w0, ok := runQueueWait()
	if runtime.GOOS != "linux" {
		if ok {
			t.Fatalf("runQueueWait on %s: %v, true; want false", runtime.GOOS, w0)
		}
		return
	}
	if !ok || w0 < 0 {
		t.Fatalf("runQueueWait: %v, %v; want a wait, true", w0, ok)
	}
}
