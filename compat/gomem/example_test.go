package gomem_test

import (
	"fmt"

	"github.com/memkit/memkit/compat/gomem"
)

// The gomem README's programs, with only the import path changed.
func Example() {
	allocator := gomem.NewScalableMemoryAllocator(1024)
	buf := allocator.Malloc(1024)
	part1, part2, part3 := buf[0:256], buf[256:512], buf[512:1024]
	copy(part1, "Part 1 data")
	copy(part2, "Part 2 data")
	allocator.Free(part1) // partial deallocation
	allocator.Free(part2)
	copy(part3, "Updated part 3")
	allocator.Free(part3)

	rm := gomem.NewRecyclableMemory(allocator)
	copy(rm.NextN(128), "Buffer 1")
	copy(rm.NextN(256), "Buffer 2")
	rm.Recycle()

	mem := gomem.NewMemory([]byte{1, 2, 3, 4, 5})
	mem.PushOne([]byte{6, 7, 8})
	fmt.Printf("Size: %d, Buffers: %d\n", mem.Size, mem.Count())
	fmt.Println(mem.ToBytes())

	reader := gomem.NewReadableBuffersFromBytes([]byte{1, 2, 3}, []byte{4, 5, 6})
	out := make([]byte, 6)
	n, err := reader.Read(out)
	fmt.Println(n, err, out)
	fmt.Println(allocator.GetTotalMalloc(), allocator.GetTotalFree())
	// Output:
	// Size: 8, Buffers: 2
	// [1 2 3 4 5 6 7 8]
	// 6 <nil> [1 2 3 4 5 6]
	// 1408 1408
}
