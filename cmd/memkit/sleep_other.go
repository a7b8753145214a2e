//go:build !linux

package main

// nanosleepClock is realClock where nanosleep is not called directly.
type nanosleepClock = realClock
