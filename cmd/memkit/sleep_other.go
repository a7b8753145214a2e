//go:build !linux

package main

// nanosleepClock is realClock where nanosleep is not called directly.
type nanosleepClock = realClock

// contextSwitches is not counted here: ok is false.
func contextSwitches() (n uint64, ok bool) { return 0, false }
