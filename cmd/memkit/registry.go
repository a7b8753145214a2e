package main

import "testing"

// A bench is one workload run against one implementation. Its full name,
// "Workload/param/impl=name", is what --filter matches, what the bench
// format prints after "Benchmark", and what `benchstat -col /impl` splits.
type bench struct {
	workload string // "GetPut/size=4KiB"
	impl     string // "memkit", "syncpool", ...
	// once marks an expensive workload measured with b.N == 1 only
	// (BurstIdle), instead of growing b.N to fill --benchtime.
	once bool
	// rounds, when above 1, splits each of --count's runs into that many
	// slices of an equal share of --benchtime, alternating with the other
	// impls of the workload (see measure), so that a cell whose figure
	// swings with the moment (a gRPC server and client on two CPUs, a map
	// larger than the caches) is measured at the same moments as its
	// peers', not in one stretch before or after theirs.
	rounds int
	// group, when set, is the name of the benches whose slices alternate
	// (by default the workload's impls): the kv rows put an op's serial
	// and RunParallel workloads in one group, since the ratio of the two
	// is read, and two stretches of the machine's moments would divide it.
	group string
	run   func(b *testing.B)
}

// noisyRounds is the rounds of the benches whose single runs swing by
// more than the differences their rows are read for: the gRPC rows (six
// runs of gRPC's own pool, unary 1 KiB, spread over 9% in CPU per RPC),
// the kv rows and the buffer row compared with bytebufferpool.
const noisyRounds = 5

func (bn *bench) name() string { return bn.workload + "/impl=" + bn.impl }

// slices is how many slices make one of bn's runs: its rounds, at least 1.
func (bn *bench) slices() int { return max(bn.rounds, 1) }

// groupName is the name of the benches bn alternates with: its group, or
// its workload.
func (bn *bench) groupName() string {
	if bn.group != "" {
		return bn.group
	}
	return bn.workload
}

// must returns v, or panics with err: for building the allocators the
// benches run on, whose configurations are constants, so that an error is
// a bug in this program (BenchmarkWorkloads runs every bench).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// baseImpl is the implementation every other one is compared with: the
// ratio column is ns/op divided by this impl's ns/op in the same workload.
const baseImpl = "memkit"

// benches holds every registered bench, in registration order, which is the
// order they run and print in.
var benches []bench

// register adds benches to the table. It is called from init functions:
// each allocator family lives in its own file (bytes.go for []byte pools)
// and registers its workloads crossed with its implementations there, so a
// new family is a new file and touches nothing else.
func register(bs ...bench) {
	for _, b := range bs {
		for i := range benches {
			if benches[i].name() == b.name() {
				panic("memkit: bench " + b.name() + " registered twice")
			}
		}
		benches = append(benches, b)
	}
}
