package buddy_test

import (
	"errors"
	"fmt"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/buddy"
)

func Example() {
	a, err := buddy.New(1<<20, 64) // a 1 MiB region, blocks from 64 B
	if err != nil {
		panic(err)
	}
	b, err := a.Alloc(3000)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(b), cap(b)) // rounded up to a power of two
	a.Free(b)                   // b must not be used after this
	// Output: 3000 4096
}

func ExampleNew() {
	_, err := buddy.New(3<<20, 64)
	fmt.Println(err)
	a, err := buddy.New(4<<20, 4096, buddy.WithOffHeap()) // region from mmap
	if err != nil {
		panic(err)
	}
	defer a.Close() // unmaps the region
	fmt.Println(a.Size(), a.MinBlock())
	// Output:
	// memkit/buddy: size 3145728 must be a power of two >= minBlock 64
	// 4194304 4096
}

// Alloc fails, without side effects, when no block is large enough.
func ExampleAllocator_Alloc() {
	a, _ := buddy.New(4096, 64)
	b, _ := a.Alloc(2048)
	_, err := a.Alloc(4096)
	fmt.Println(errors.Is(err, buddy.ErrNoSpace))
	a.Free(b)
	c, err := a.Alloc(4096) // the halves merged again
	fmt.Println(len(c), err)
	// Output:
	// true
	// 4096 <nil>
}

func ExampleAllocator_ReadStats() {
	a, _ := buddy.New(1024, 256)
	b, _ := a.Alloc(200)
	a.PublishStats() // figures as of now, for ReadStats on any goroutine
	var s memkit.Stats
	a.ReadStats(&s) // reuse s: later calls do not allocate
	fmt.Print(s.String())
	a.Free(b)
	// Output:
	// in use 256B  reserved 1KiB  live 1  allocs 1  frees 0  fallbacks 0  failures 0  grows 1  releases 0  bad frees 0
	// free 768B  largest free 512B  fragmentation 0.33
	//      class       in use     reserved    live    idle      allocs       frees   grows  releases
	//       256B         256B         512B       1       1           1           0       0         0
	//       512B           0B         512B       0       1           0           0       0         0
	//       1KiB           0B           0B       0       0           0           0       0         0
}

// The region is the budget; WithBudgetAlert reports when the bytes handed
// out cross a threshold.
func ExampleWithBudgetAlert() {
	a, _ := buddy.New(1<<20, 64, buddy.WithBudgetAlert(512<<10, func(used int64, above bool) {
		fmt.Println("in use", used>>10, "KiB, above", above)
	}))
	b, _ := a.Alloc(300 << 10) // 512 KiB block
	a.Free(b)
	_, err := a.Alloc(2 << 20) // larger than the region
	fmt.Println(errors.Is(err, buddy.ErrNoSpace))
	// Output:
	// in use 512 KiB, above true
	// in use 0 KiB, above false
	// true
}
