package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// workloadDocs says what each workload family (the name up to the first
// "/") measures; memkit bench --list prints it. A family registered
// without an entry here fails TestWorkloadDocs.
var workloadDocs = map[string]string{
	"GetPut":                 "one goroutine gets a []byte of the size, writes and reads it, and puts it back",
	"GetPutParallel":         "GetPut on every P at once (b.RunParallel): contention in the pool",
	"Mixed":                  "GetPut over a spread of sizes: log-uniform 64B-64KiB, or sizes just over each class boundary",
	"CrossGoroutine":         "a buffer got on one goroutine and put back on another, through a channel",
	"BurstIdle":              "a 512MiB burst of live buffers, then 2.25s idle and 3 GC cycles: the memory retained afterwards (retained-B), not speed",
	"SlabAllocFree":          "slab.Arena Alloc and DecRef of one size on one goroutine, beside pools of the same size",
	"SlabAllocFreeParallel":  "the Shared slab arena's Alloc and DecRef on every P at once",
	"SlabChain":              "a 64MiB payload written as a chain of 64KiB slab chunks, then read back",
	"RingSeed":               "1000 writes and reads of a 64-byte record through a 10-slot ring (one op is all 1000)",
	"ExtentMallocFree":       "extent's exact-size Malloc and Free of one size, beside make and other allocators",
	"ExtentRandomLive":       "1000 live allocations of log-uniform sizes, a random one freed and replaced per op: fragmentation",
	"ExtentBorrowRecycle":    "extent's Borrow of 64B in batches of 64, then one Recycle, beside make",
	"ExtentLoop":             "Malloc and Free of 8KiB in a loop, the seed's extent test",
	"BuddyAllocFree":         "the buddy allocator's Alloc and Free, one size or log-uniform sizes",
	"ArenaNew":               "arena.New of one object, with or without pointers, beside new (the GC's allocation)",
	"BinaryTrees":            "the benchmark game's binary-trees: build and walk trees of nodes from new or an arena",
	"BufferJSON":             "encode 20000 ints as a JSON array with buffer.JSON, beside encoding/json and others",
	"BufferCheckout":         "buffer.FixedPool Checkout and Close of a fixed-size buffer, beside a channel of buffers",
	"BufferCheckoutParallel": "BufferCheckout on every P at once",
	"BufferGetWriteFree":     "get a growable buffer, write 1000 bytes, free it: buffer.Get beside bytebufferpool and sync.Pool",
	"BufferReader":           "one read operation of buffer.Reader over 1KiB segments, beside bytes.Reader",
	"GRPC":                   "one RPC through a real gRPC server and client on loopback, with grpcpool or gRPC's default buffer pool",
	"GRPCBench":              "one RPC of gRPC's own benchmark service (grpc-go's benchmark packages), 8 in flight, with grpcpool or gRPC's default as the process's pool; at 1 KiB gRPC's default again (grpc-again), the run's noise",
	"GRPCBenchEqualHeap":     "GRPCBench with GOGC off and one memory limit for both pools (16MiB above the process's memory): GC cycles at equal memory",
	"KV":                     "a byte map of 64Ki entries (16-byte keys, 100-1100-byte values): Get, overwriting Set, or 9 Gets to 1 Set, on one goroutine",
	"KVParallel":             "KV on every P at once (b.RunParallel): the map's locking under contention",
	"GRPCGrowIdle":           "grpc-go issue 8500: responses growing 1MiB-4MiB, then 2.25s idle and 2 GC cycles: GC work and heap kept, not speed",
}

// family is a workload's name up to its first "/": GetPut of GetPut/size=4KiB.
func family(workload string) string {
	f, _, _ := strings.Cut(workload, "/")
	return f
}

// writeList prints the workloads of sel, grouped by family with what the
// family measures, each with the impls it runs against.
func writeList(w io.Writer, sel []*bench) error {
	bw := bufio.NewWriter(w)
	var workloads []string
	impls := map[string][]string{}
	for _, bn := range sel {
		if impls[bn.workload] == nil {
			workloads = append(workloads, bn.workload)
		}
		impls[bn.workload] = append(impls[bn.workload], bn.impl)
	}
	width := 0
	for _, wl := range workloads {
		width = max(width, len(wl))
	}
	last := ""
	for _, wl := range workloads {
		if f := family(wl); f != last {
			if last != "" {
				bw.WriteByte('\n')
			}
			fmt.Fprintf(bw, "%s: %s\n", f, workloadDocs[f])
			last = f
		}
		fmt.Fprintf(bw, "  %-*s  %s\n", width, wl, strings.Join(impls[wl], " "))
	}
	return bw.Flush()
}
