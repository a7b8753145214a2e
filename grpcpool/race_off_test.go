//go:build !race

package grpcpool_test

const raceEnabled = false
