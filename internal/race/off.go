//go:build !race

package race

// Enabled is true when the program is built with -race.
const Enabled = false
