package offheap_test

import (
	"fmt"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/offheap"
)

func Example() {
	b, err := offheap.Alloc(1 << 20) // 1 MiB the GC never scans or counts
	if err != nil {
		panic(err)
	}
	n := copy(b, "bytes, numbers and indices only: never Go pointers")
	fmt.Println(string(b[:5]), n, len(b))

	// Idle for a while: let the OS take the pages back, keep the mapping.
	if err := offheap.Release(b); err != nil {
		panic(err)
	}
	if err := offheap.Free(b); err != nil { // b must not be used after this
		panic(err)
	}
	// Output: bytes 50 1048576
}

func ExampleReadStats() {
	var before, after memkit.Stats
	offheap.ReadStats(&before)
	b, _ := offheap.Alloc(100) // rounded up to a page
	offheap.ReadStats(&after)
	fmt.Println(after.InUseBytes-before.InUseBytes == uint64(offheap.PageSize()), after.LiveObjects-before.LiveObjects)
	_ = offheap.Free(b)
	// Output: true 1
}
