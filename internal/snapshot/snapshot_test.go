package snapshot

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestSeq_ReadsOneMoment publishes pairs that are always equal while
// readers check that they never see two different ones.
func TestSeq_ReadsOneMoment(t *testing.T) {
	var s Seq
	var x, y atomic.Uint64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				s.Settle()
				for {
					v := s.BeginRead()
					a, b := x.Load(), y.Load()
					if s.Retry(v) {
						continue
					}
					if a != b {
						t.Errorf("read %d and %d from one publication", a, b)
						return
					}
					break
				}
			}
		}()
	}
	for i := range uint64(200000) {
		if i%16 == 0 || s.Asked() {
			s.BeginWrite()
			x.Store(i)
			y.Store(i)
			s.EndWrite()
		}
	}
	stop.Store(true)
	wg.Wait()
	if s.Asked() {
		s.BeginWrite()
		s.EndWrite()
	}
	if s.Asked() {
		t.Fatal("a publication did not answer the request")
	}
}

// Store and Load move a set of figures as one: a reader never sees two
// publications mixed.
func TestSeq_StoreLoadOneMoment(t *testing.T) {
	var s Seq
	var dst [4]atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(1); i <= 20000; i++ {
			s.Store(dst[:], []uint64{i, i, i, i})
		}
	}()
	got := make([]uint64, 4)
	for {
		s.Load(dst[:], got)
		if got[0] != got[1] || got[1] != got[2] || got[2] != got[3] {
			t.Fatalf("Load mixed publications: %v", got)
		}
		select {
		case <-done:
			if s.Load(dst[:], got); got[0] != 20000 {
				t.Fatalf("last Load %v; want the last Store", got)
			}
			return
		default:
		}
	}
}
