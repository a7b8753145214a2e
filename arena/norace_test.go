//go:build !race

package arena_test

// raceEnabled reports whether the race detector is on: it allocates, so
// AllocsPerRun tests skip.
const raceEnabled = false
