//go:build race

package grpcpool_test

// raceEnabled reports the race detector, under which sync.Pool drops a
// share of what is put in it, so the pooled headers are made again.
const raceEnabled = true
