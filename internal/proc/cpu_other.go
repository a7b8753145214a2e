//go:build !unix

package proc

import "time"

// CPU returns the CPU time, user and system, the process has used so far;
// ok is false where the system does not say, as on this one.
func CPU() (d time.Duration, ok bool) { return 0, false }

// ContextSwitches returns the context switches of the process's threads
// so far; ok is false where the system does not say, as on this one.
func ContextSwitches() (n uint64, ok bool) { return 0, false }
