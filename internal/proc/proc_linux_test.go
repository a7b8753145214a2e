package proc

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestCPU_Grows spins on one locked OS thread until that thread's own CPU
// time, read through a second clock (the kernel's per-thread rusage), has
// grown by 20ms, and requires CPU to have grown by at least as much (the
// process's time includes the thread's) and never to go back. Both clocks
// count CPU time, not wall time, so a busy machine only makes the spin take
// longer; a CPU that stands still, counts another process, or goes back
// fails.
func TestCPU_Grows(t *testing.T) {
	before, ok := CPU()
	if !ok {
		t.Fatal("CPU() not available on linux")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	thread0 := threadCPU(t)
	last := before
	var spun time.Duration
	for spun < 20*time.Millisecond {
		for range 100_000 {
			sink++
		}
		now, _ := CPU()
		if now < last {
			t.Fatalf("CPU went back from %v to %v", last, now)
		}
		last = now
		spun = threadCPU(t) - thread0
	}
	after, _ := CPU()
	// The kernel splits each clock's time into user and system time
	// separately, which can shift a tick between them: allow one tick.
	if grew := after - before; grew < spun-10*time.Millisecond {
		t.Fatalf("the thread used %v of CPU, and CPU() grew by %v", spun, grew)
	}
}

var sink int

// threadCPU is the CPU time of the calling OS thread (RUSAGE_THREAD).
func threadCPU(t *testing.T) time.Duration {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
