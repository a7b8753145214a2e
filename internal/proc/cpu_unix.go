//go:build unix

package proc

import (
	"syscall"
	"time"
)

// CPU returns the CPU time, user and system, the process has used so far;
// ok is false where the system does not say.
func CPU() (d time.Duration, ok bool) {
	ru, ok := self()
	if !ok {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// ContextSwitches returns the voluntary and involuntary context switches
// of the process's threads so far; ok is false where the system does not
// say.
func ContextSwitches() (n uint64, ok bool) {
	ru, ok := self()
	if !ok {
		return 0, false
	}
	return uint64(ru.Nvcsw + ru.Nivcsw), true
}

// self is getrusage of the whole process.
func self() (ru syscall.Rusage, ok bool) {
	return ru, syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil
}
