package memtest

import "runtime"

// ForceGCs runs GCs back to back on a goroutine of its own, yielding the
// processor between them, for stress tests whose allocators must survive
// a GC at any moment (run beside debug.SetGCPercent(1)). The returned stop
// ends the loop and waits for its last GC.
func ForceGCs() (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
				runtime.GC()
				runtime.Gosched()
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
