package shard_test

import (
	"sync"
	"testing"

	"github.com/memkit/memkit/internal/shard"
)

type testShard struct {
	shard.Lock
	n int
	_ shard.Pad
}

func TestCount(t *testing.T) {
	for _, c := range []struct{ in, want int }{{-1, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 4}, {64, 64}, {65, 128}} {
		if got := shard.Count(c.in); got != c.want {
			t.Errorf("Count(%d) = %d, want %d", c.in, got, c.want)
		}
	}
	if got := shard.PerP(8, 64); got < 64 || got&(got-1) != 0 {
		t.Errorf("PerP(8, 64) = %d, want a power of two >= 64", got)
	}
}

func TestHint_StableOnOneStack(t *testing.T) {
	a, b := shard.Hint(), shard.Hint()
	if a != b {
		t.Fatalf("two hints from one frame differ: %#x, %#x", a, b)
	}
	if a>>16 != 0 {
		t.Fatalf("hint %#x has more than 16 bits", a)
	}
}

func TestLock_Excludes(t *testing.T) {
	var l shard.Lock
	n := 0
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10000 {
				l.Lock()
				n++
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != 40000 {
		t.Fatalf("n = %d, want 40000", n)
	}
	if !l.TryLock() || l.TryLock() || !l.Locked() {
		t.Fatal("TryLock on a free lock must succeed and on a held one fail")
	}
	l.Unlock()
}

func TestLockAny_SkipsBusyShards(t *testing.T) {
	shards := make([]testShard, 4)
	shards[1].Lock.Lock()
	shards[2].Lock.Lock()
	s, h := shard.LockAny(shards, 1)
	if s != &shards[3] || h != 3 {
		t.Fatalf("LockAny from home 1 took hint %d, want shard 3", h)
	}
	s, h = shard.LockAny(shards, 2)
	if s != &shards[0] || h != 4 {
		t.Fatalf("LockAny from home 2 took hint %d, want shard 0, hint 4", h)
	}
}

func TestLockAny_WaitsWhenAllBusy(t *testing.T) {
	shards := make([]testShard, 2)
	shards[0].Lock.Lock()
	shards[1].Lock.Lock()
	done := make(chan *testShard)
	go func() {
		s, _ := shard.LockAny(shards, 0)
		done <- s
	}()
	shards[1].Unlock()
	if s := <-done; s != &shards[1] {
		t.Fatal("LockAny did not take the shard that came free")
	}
}

func BenchmarkHintLock(b *testing.B) {
	shards := make([]testShard, 64)
	b.ReportAllocs()
	for b.Loop() {
		s := &shards[shard.Hint()&63]
		if !s.TryLock() {
			s, _ = shard.LockAny(shards, shard.Hint())
		}
		s.n++
		s.Unlock()
	}
}
