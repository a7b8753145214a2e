//go:build race

package bytepool_test

// raceEnabled reports whether the race detector is on: sync.Pool drops a
// quarter of what it is given at random under it, so an Elastic pool's
// reuse of a buffer is not certain then.
const raceEnabled = true
