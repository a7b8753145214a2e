package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memkit/memkit/internal/proc"
)

// memkit bench names each run during which other processes used more than
// busyShare of a CPU and at least busyFloor, and no other.
func TestWriteBusyNotes(t *testing.T) {
	bn := &bench{workload: "ExtentMallocFreeParallel/size=64KiB", impl: "memkit"}
	rs := []result{{bench: bn, busy: []runBusy{
		{others: 10 * time.Millisecond, wall: time.Second},            // 1%: an idle machine
		{others: 900 * time.Millisecond, wall: time.Second},           // 90%: a busy one
		{others: 200 * time.Millisecond, wall: time.Second},           // at busyShare: not over it
		{others: 201 * time.Millisecond, wall: time.Second},           // just over
		{others: 40 * time.Millisecond, wall: 100 * time.Millisecond}, // over the share, under the floor
	}}}
	var w strings.Builder
	writeBusyNotes(&w, rs)
	lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
	want := []string{
		"memkit bench: ExtentMallocFreeParallel/size=64KiB/impl=memkit run 2 of 5: other processes used 900ms of CPU in its 1s (90% of a CPU), so its figure measures the machine's load; run it again on an idle machine",
		"memkit bench: ExtentMallocFreeParallel/size=64KiB/impl=memkit run 4 of 5: other processes used 201ms of CPU in its 1s (20% of a CPU), so its figure measures the machine's load; run it again on an idle machine",
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

// spinEnv makes this test binary a child that spins until it has used
// 500ms of CPU: another process for TestOthersCPU to see.
const spinEnv = "MEMKIT_TEST_SPIN"

// othersCPU grows by what another process burns (on a busy machine it
// grows more, never less).
func TestOthersCPU(t *testing.T) {
	if os.Getenv(spinEnv) != "" {
		for d, _ := proc.CPU(); d < 500*time.Millisecond; d, _ = proc.CPU() {
		}
		os.Exit(0)
	}
	o0, ok := othersCPU()
	if runtime.GOOS != "linux" {
		if ok {
			t.Fatalf("othersCPU on %s: %v, true; want false", runtime.GOOS, o0)
		}
		return
	}
	if !ok {
		t.Fatal("othersCPU: false on Linux")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOthersCPU$")
	cmd.Env = append(os.Environ(), spinEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("spinning child: %v\n%s", err, out)
	}
	o1, _ := othersCPU()
	child := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	// The machine counts in ticks of 10ms per CPU: allow a few of them.
	if got, min := o1-o0, child-50*time.Millisecond; got < min {
		t.Errorf("othersCPU grew %v while a child used %v; want at least %v", got, child, min)
	}
}
