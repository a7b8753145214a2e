//go:build !linux

package main

import "time"

// othersCPU reports false: memkit bench reads the machine's busy time from
// Linux's /proc/stat only.
func othersCPU() (time.Duration, bool) { return 0, false }
