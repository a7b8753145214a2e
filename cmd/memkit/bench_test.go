package main

import (
	"testing"
	"time"
)

// BenchmarkWorkloads runs every registered bench as a sub-benchmark, so
// that `go test -bench . -benchtime 1x` exercises each once, and so that
// they also run under go test's own flags (-cpu, -count, -cpuprofile):
//
//	go test -run '^$' -bench 'Workloads/GetPut/size=4KiB' -count 6 | benchstat -col /impl -
//
// With -short, BurstIdle holds 32 MiB instead of 512 MiB, and BurstIdle and
// GRPCGrowIdle do not idle before their GC cycles.
func BenchmarkWorkloads(b *testing.B) {
	if testing.Short() {
		defer func(c int, t, g time.Duration) { burst.count, burstIdleTime, grpcIdle = c, t, g }(burst.count, burstIdleTime, grpcIdle)
		burst.count, burstIdleTime, grpcIdle = 512, 0, 0
	}
	for _, bn := range benches {
		b.Run(bn.workload+"/impl="+bn.impl, bn.run)
	}
}
