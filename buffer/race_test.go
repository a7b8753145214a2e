//go:build race

package buffer_test

// raceEnabled reports whether the race detector is on: it allocates, and
// sync.Pool drops items at random under it, so allocation counts are off.
const raceEnabled = true
