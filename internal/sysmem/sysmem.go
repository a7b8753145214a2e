// Package sysmem tells whether the operating system can serve a large
// allocation, so that an allocator refuses a size it cannot get with an
// error (or a memkit panic) instead of letting make end the process with
// the runtime's unrecoverable "out of memory".
//
// The runtime asks the kernel for the memory of a large allocation with
// one anonymous mapping and treats a refusal as fatal. [Available] makes
// the same request first, and gives the mapping straight back without
// touching it, so that the answer costs two system calls and no memory.
// It is a forecast, not a reservation: memory other goroutines or
// processes take in between can still make the later allocation fail, and
// a kernel that overcommits (Linux's vm.overcommit_memory=1) may accept
// memory it cannot back.
package sysmem

// ProbeMin is the smallest size [Available] asks the system about; it
// reports true for smaller ones without a system call, so that calling it
// on every allocation costs a compare.
const ProbeMin = 64 << 20

// MaxAlloc is the largest size [Available] accepts: the largest single
// allocation the Go runtime serves on 64-bit platforms (its 48-bit heap
// address space, halved for margin), or half the address space on 32-bit
// ones.
const MaxAlloc = uint64(1)<<(min(uintBits-1, 47)) - 1

const uintBits = 32 << (^uint(0) >> 63)

// Available reports whether a make of n bytes can get its memory from the
// system now: true for n below [ProbeMin], false above [MaxAlloc], and in
// between whether the kernel accepts a private anonymous mapping of n bytes
// (on platforms without mmap, true).
func Available(n uint64) bool {
	if n < ProbeMin {
		return true
	}
	if n > MaxAlloc {
		return false
	}
	return probe(n)
}
