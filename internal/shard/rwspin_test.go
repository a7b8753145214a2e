package shard_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memkit/memkit/internal/shard"
)

// Writers under SpinLock keep two counters equal; readers under SpinRLock
// must never see them differ, and no increment may be lost.
func TestSpinLock_Excludes(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			var mu sync.RWMutex
			var a, b int
			const writers, readers, n = 3, 3, 2000
			var wg sync.WaitGroup
			var torn atomic.Int64
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						shard.SpinLock(&mu)
						a++
						runtime.Gosched() // let the others find it held
						b++
						mu.Unlock()
					}
				}()
			}
			for range readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						shard.SpinRLock(&mu)
						if a != b {
							torn.Add(1)
						}
						mu.RUnlock()
					}
				}()
			}
			wg.Wait()
			if a != writers*n || b != writers*n || torn.Load() != 0 {
				t.Fatalf("GOMAXPROCS=%d: counters %d and %d, want %d; %d reads saw them differ", procs, a, b, writers*n, torn.Load())
			}
		})
	}
}

// A lock held past SpinFor is still waited for: SpinLock and SpinRLock
// return only once the holder has let go, after they have stopped spinning
// and blocked.
func TestSpinLock_WaitsPastSpinFor(t *testing.T) {
	for _, write := range []bool{true, false} {
		var mu sync.RWMutex
		mu.Lock()
		var released atomic.Bool
		done := make(chan bool)
		go func() {
			if write {
				shard.SpinLock(&mu)
				done <- released.Load()
				mu.Unlock()
			} else {
				shard.SpinRLock(&mu)
				done <- released.Load()
				mu.RUnlock()
			}
		}()
		time.Sleep(20 * shard.SpinFor)
		released.Store(true)
		mu.Unlock()
		if !<-done {
			t.Fatalf("write=%v: took the lock while another held it", write)
		}
	}
}
