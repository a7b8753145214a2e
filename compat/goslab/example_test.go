package slab_test

import (
	"encoding/binary"
	"fmt"
	"math"

	slab "github.com/memkit/memkit/compat/goslab"
)

// The go-slab program of the source write-up, with only the import path
// changed: allocate, store numbers, chain two buffers, read the stats.
func Example() {
	arena := slab.NewArena(8, 1024, 2, nil)

	intBuf := arena.Alloc(8)
	binary.LittleEndian.PutUint64(intBuf, 57555)
	fmt.Println("Integer stored in buffer:", binary.LittleEndian.Uint64(intBuf))

	floatBuf := arena.Alloc(8)
	binary.LittleEndian.PutUint64(floatBuf, math.Float64bits(123.456))
	fmt.Println("Float stored in buffer:", math.Float64frombits(binary.LittleEndian.Uint64(floatBuf)))

	buf1 := arena.Alloc(10)
	buf2 := arena.Alloc(15)
	arena.SetNext(buf1, buf2)
	nextBuf := arena.GetNext(buf1)
	fmt.Println("next is buf2:", &nextBuf[0] == &buf2[0])
	arena.DecRef(buf1)
	arena.DecRef(buf2)
	arena.DecRef(nextBuf) // GetNext added a reference

	arena.DecRef(intBuf)
	arena.DecRef(floatBuf)
	st := arena.Stats(map[string]int64{})
	fmt.Println("totAllocs:", st["totAllocs"], "totDecRefZeroes:", st["totDecRefZeroes"], "totGetNexts:", st["totGetNexts"])
	fmt.Println("slabClass-000000-chunkSize:", st["slabClass-000000-chunkSize"])
	// Output:
	// Integer stored in buffer: 57555
	// Float stored in buffer: 123.456
	// next is buf2: true
	// totAllocs: 4 totDecRefZeroes: 4 totGetNexts: 1
	// slabClass-000000-chunkSize: 8
}
