//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package offheap

import "syscall"

// MmapAvailable reports whether memory comes from mmap, outside the Go heap
// (true here: Linux, macOS, the BSDs), or is zeroed Go heap memory, as on
// Windows, Plan 9, js/wasm and WASI, so that every program builds.
const MmapAvailable = true

var pageSize = syscall.Getpagesize()

func sysAlloc(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

// sysFree unmaps b, which is exactly a slice sysAlloc returned (syscall
// finds its mapping by the address of the last byte).
func sysFree(b []byte) error { return syscall.Munmap(b) }
