// Package race reports whether the race detector is on, for tests: it
// allocates, and under it sync.Pool drops a share of what it is given at
// random, so allocation counts and the reuse of pooled memory are not
// certain then. Tests that pin either skip when Enabled is true.
package race
