package offheap_test

import (
	"errors"
	"fmt"
	"unsafe"

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

// An Allocator with guard pages and a budget: each slice ends before a page
// that faults when touched, and Free keeps the memory protected.
func ExampleNew() {
	a, err := offheap.New(offheap.WithGuardPages(), offheap.WithBudget(1<<20))
	if err != nil {
		panic(err)
	}
	b, _ := a.Alloc(1000)
	end := uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b))
	fmt.Println(len(b), !offheap.GuardPagesAvailable || end%uintptr(offheap.PageSize()) == 0)

	_, err = a.Alloc(2 << 20) // past the budget
	fmt.Println(errors.Is(err, offheap.ErrBudget))

	_ = a.Free(b) // from here on, b[0] faults
	_ = a.Purge()
	// Output:
	// 1000 true
	// true
}
