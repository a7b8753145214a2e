package main

import "testing"

// BenchmarkWorkloads runs every registered bench as a sub-benchmark, so
// that `go test -bench . -benchtime 1x` exercises each once, and so that
// they also run under go test's own flags (-cpu, -count, -cpuprofile):
//
//	go test -run '^$' -bench 'Workloads/GetPut/size=4KiB' -count 6 | benchstat -col /impl -
//
// With -short, BurstIdle holds 32 MiB instead of 512 MiB.
func BenchmarkWorkloads(b *testing.B) {
	if testing.Short() {
		defer func(c int) { burst.count = c }(burst.count)
		burst.count = 512
	}
	for _, bn := range benches {
		b.Run(bn.workload+"/impl="+bn.impl, bn.run)
	}
}
