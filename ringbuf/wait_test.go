package ringbuf_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memkit/memkit/ringbuf"
)

// parked waits until some goroutine sleeps in the ring's wait, parked on
// a channel ("[select]" in its stack) rather than spinning or yielding, and
// fails t if none does within 10 seconds.
func parked(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "[select") && strings.Contains(g, "ringbuf.(*waitq).wait") {
				return
			}
		}
	}
	t.Fatal("no goroutine sleeps in the ring's wait: the waiter spins")
}

// withTimeout returns a context that ends after d.
func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// fullWithPeek returns a ring of two slots whose next write must fill the
// slot of a record held through Peek, and that Peek.
func fullWithPeek(t *testing.T, pol ringbuf.Policy) (*ringbuf.Ring, ringbuf.Slot) {
	r := mustNew(t, 2, 8, ringbuf.WithPolicy(pol))
	r.Write([]byte("a"))
	r.Write([]byte("b"))
	g, ok := r.Peek()
	if !ok || string(g.Bytes()) != "a" {
		t.Fatalf("Peek = %q, %v", g.Bytes(), ok)
	}
	return r, g
}

// A writer that must fill a slot still lent by Peek gives up when its
// context ends, under every policy that waits, even on the goroutine that
// holds the Peek (issue 13 case 7: Overwrite ignored its context and never
// returned).
func TestRing_WaitForAPeekedSlotHonoursTheContext(t *testing.T) {
	for _, pol := range []ringbuf.Policy{ringbuf.Overwrite, ringbuf.Block} {
		t.Run(pol.String(), func(t *testing.T) {
			r, g := fullWithPeek(t, pol)
			if err := r.WriteContext(withTimeout(t, 10*time.Millisecond), []byte("c")); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("WriteContext = %v; want DeadlineExceeded", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := r.Reserve(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("Reserve = %v; want Canceled", err)
			}
			if s := readStats(r); s.Failures != 2 || r.Dropped() != 0 {
				t.Fatalf("Failures %d, Dropped %d; want 2, 0", s.Failures, r.Dropped())
			}
			if string(g.Bytes()) != "a" {
				t.Fatalf("the peeked record reads %q", g.Bytes())
			}
			r.Release(g)
			if err := r.Write([]byte("c")); err != nil {
				t.Fatalf("Write after the Release = %v", err)
			}
			p := make([]byte, 8)
			for _, want := range []string{"b", "c"} {
				if n, ok := r.Read(p); !ok || string(p[:n]) != want {
					t.Fatalf("Read = %q, %v; want %q", p[:n], ok, want)
				}
			}
		})
	}
	// Reject never waits.
	r, g := fullWithPeek(t, ringbuf.Reject)
	if err := r.Write([]byte("c")); !errors.Is(err, ringbuf.ErrFull) {
		t.Fatalf("Reject: Write = %v; want ErrFull", err)
	}
	r.Release(g)
}

// The waiter sleeps instead of spinning a core, and the Release wakes it.
func TestRing_WaitForAPeekedSlotSleeps(t *testing.T) {
	for _, pol := range []ringbuf.Policy{ringbuf.Overwrite, ringbuf.Block} {
		t.Run(pol.String(), func(t *testing.T) {
			r, g := fullWithPeek(t, pol)
			done := make(chan error)
			go func() { done <- r.Write([]byte("c")) }()
			parked(t)
			r.Release(g)
			if err := <-done; err != nil {
				t.Fatalf("Write = %v", err)
			}
			if r.Len() != 2 || r.Dropped() != 0 {
				t.Fatalf("Len %d, Dropped %d; want 2, 0", r.Len(), r.Dropped())
			}
		})
	}
}

// Under Overwrite, a full ring whose oldest record is still reserved cannot
// drop it: the writer waits, asleep, for its Commit or its context.
func TestRing_OverwriteWaitsForTheOldestCommit(t *testing.T) {
	r := mustNew(t, 2, 8, ringbuf.WithPolicy(ringbuf.Overwrite))
	s, err := r.Reserve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("b"))
	if err := r.WriteContext(withTimeout(t, 10*time.Millisecond), []byte("c")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WriteContext = %v; want DeadlineExceeded", err)
	}
	done := make(chan error)
	go func() { done <- r.Write([]byte("c")) }()
	parked(t)
	r.Commit(s, copy(s.Bytes(), "a"))
	if err := <-done; err != nil {
		t.Fatalf("Write = %v", err)
	}
	p := make([]byte, 8)
	for _, want := range []string{"b", "c"} {
		if n, ok := r.Read(p); !ok || string(p[:n]) != want {
			t.Fatalf("Read = %q, %v; want %q", p[:n], ok, want)
		}
	}
	if r.Dropped() != 1 {
		t.Fatalf("Dropped %d; want 1 (a)", r.Dropped())
	}
}

// ReadContext sleeps on an empty ring until a record comes.
func TestRing_ReadContextSleeps(t *testing.T) {
	r := mustNew(t, 2, 8)
	done := make(chan string)
	go func() {
		p := make([]byte, 8)
		n, err := r.ReadContext(context.Background(), p)
		if err != nil {
			t.Error(err)
		}
		done <- string(p[:n])
	}()
	parked(t)
	r.Write([]byte("x"))
	if got := <-done; got != "x" {
		t.Fatalf("ReadContext read %q", got)
	}
}

// Many writers sleeping on one ring all get through once the slot comes
// back: a wake reaches every waiter whose condition holds.
func TestRing_ManyWaitersAllWake(t *testing.T) {
	for _, pol := range []ringbuf.Policy{ringbuf.Overwrite, ringbuf.Block} {
		t.Run(pol.String(), func(t *testing.T) {
			r, g := fullWithPeek(t, pol)
			const writers = 8
			done := make(chan error, writers)
			for range writers {
				go func() { done <- r.WriteContext(withTimeout(t, time.Minute), []byte("w")) }()
			}
			parked(t)
			r.Release(g)
			p := make([]byte, 8)
			read := 0
			for range writers {
				if pol == ringbuf.Block { // each waits for a reader
					for {
						if _, ok := r.Read(p); ok {
							read++
							break
						}
						runtime.Gosched()
					}
				}
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			for {
				if _, ok := r.Read(p); !ok {
					break
				}
				read++
			}
			// b and the writers' records: read or dropped, none lost.
			if uint64(read)+r.Dropped() != writers+1 {
				t.Fatalf("read %d + dropped %d; want %d", read, r.Dropped(), writers+1)
			}
		})
	}
}
