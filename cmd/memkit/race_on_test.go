//go:build race

package main

// raceEnabled reports whether the race detector is on: sync.Pool drops a
// quarter of what it is given at random under it, so the pools memkit
// builds on (an Elastic bytepool, buffer.Get) allocate now and then.
const raceEnabled = true
