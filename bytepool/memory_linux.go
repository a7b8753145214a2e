package bytepool

import "syscall"

// machineMemory reports the bytes of RAM and swap the system has, or 0 if
// it cannot tell.
func machineMemory() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	unit := uint64(max(si.Unit, 1))
	return (uint64(si.Totalram) + uint64(si.Totalswap)) * unit
}
