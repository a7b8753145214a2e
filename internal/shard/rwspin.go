package shard

import (
	"runtime"
	"sync"
	"time"
)

// SpinFor is how long [SpinLock] and [SpinRLock] keep trying a held
// sync.RWMutex before they block on it.
//
// Why spin on a lock whose holders keep it a few microseconds: a goroutine
// that blocks on a sync.RWMutex sleeps, and the Unlock that wakes it puts it
// in the run queue of the unlocking goroutine's P, where it waits until that
// P schedules again, while the other P, idle, is woken through the OS. In a
// trace of memkit bench's KVParallel Set (two goroutines on two Ps, 256
// shard locks) 6,430 waits each took 30 µs blocked and then 100 µs runnable
// before running: the second CPU sat idle a quarter of the time. A holder
// that keeps a lock longer than SpinFor (a held Range, a preempted holder)
// costs a spinner SpinFor, then the sleep it would have had anyway.
const SpinFor = 50 * time.Microsecond

// SpinLock write-locks rw. While another goroutine holds rw, it tries again
// for up to [SpinFor] before it blocks; with GOMAXPROCS=1 it blocks at once,
// since the holder cannot run while it spins.
func SpinLock(rw *sync.RWMutex) {
	if !rw.TryLock() && !spin(rw, true) {
		rw.Lock()
	}
}

// SpinRLock read-locks rw, trying again while a writer holds it as
// [SpinLock] does.
func SpinRLock(rw *sync.RWMutex) {
	if !rw.TryRLock() && !spin(rw, false) {
		rw.RLock()
	}
}

// spin tries rw's write or read lock for up to SpinFor and reports whether
// it took it. It reads the clock every 64 tries: a try costs a load (a
// read try, or a write try while a writer holds rw) to a few locked
// instructions (a write try while readers do).
func spin(rw *sync.RWMutex, write bool) bool {
	if runtime.GOMAXPROCS(0) == 1 {
		return false
	}
	start := time.Now()
	for {
		for range 64 {
			if write && rw.TryLock() || !write && rw.TryRLock() {
				return true
			}
		}
		if time.Since(start) > SpinFor {
			return false
		}
	}
}
