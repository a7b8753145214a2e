package main

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"github.com/memkit/memkit/internal/proc"
)

// userHZ is the unit of /proc/stat's counts: USER_HZ, 100 on every Linux
// ABI Go supports (sysconf(_SC_CLK_TCK) would need cgo to ask).
const userHZ = 100

// othersCPU returns the CPU time the machine has spent outside this
// process since it booted: the busy time on /proc/stat's "cpu" line (user,
// nice, system, irq, softirq, and steal, the time a hypervisor gave
// another guest) less this process's own user and system time. Its growth
// over a run is what other processes and guests took from the CPUs while
// the run ran. The machine's count moves in ticks of 1/userHZ s per CPU,
// so a difference is exact to a few ticks. It reports false where
// /proc/stat cannot be read.
func othersCPU() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	// cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0, false
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err != nil {
			return 0, false
		}
		busy += n
	}
	self, ok := proc.CPU()
	if !ok {
		return 0, false
	}
	return time.Duration(busy)*time.Second/userHZ - self, true
}
