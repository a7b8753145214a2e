//go:build !linux

package bytepool

// machineMemory reports the bytes of RAM and swap the system has, or 0 if
// it cannot tell, as on this platform: a Bounded budget is then checked
// against its documented range only.
func machineMemory() uint64 { return 0 }
