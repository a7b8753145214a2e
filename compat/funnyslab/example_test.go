package slab_test

import (
	"fmt"

	slab "github.com/memkit/memkit/compat/funnyslab"
)

// The funny/slab README's program, with only the import path changed.
func Example() {
	pool := slab.NewAtomPool(
		64,        // The smallest chunk size is 64B.
		64*1024,   // The largest chunk size is 64KB.
		2,         // Power of 2 growth in chunk size.
		1024*1024, // Each slab will be 1MB in size.
	)
	buf := pool.Alloc(64)
	copy(buf, "hello")
	fmt.Println(len(buf), cap(buf), string(buf[:5]))
	pool.Free(buf)
	// Output: 64 64 hello
}
