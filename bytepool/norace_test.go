//go:build !race

package bytepool_test

// raceEnabled reports whether the race detector is on (see race_test.go).
const raceEnabled = false
