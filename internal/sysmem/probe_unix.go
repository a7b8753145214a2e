//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package sysmem

import "syscall"

// probe maps n bytes of private anonymous memory, readable and writable as
// the runtime maps its heap, and unmaps them at once.
func probe(n uint64) bool {
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return false
	}
	syscall.Munmap(b)
	return true
}
