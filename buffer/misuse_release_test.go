//go:build !memkitdebug

package buffer_test

import (
	"errors"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/internal/memtest"
)

// What the release build does with each mistake of the misuse suite
// (misuse_test.go runs under -tags memkitdebug): caught with the exact
// panic or error, or, where it cannot tell in O(1), what happens then.

func TestRelease_DoubleFreeBeforeReuse(t *testing.T) {
	// Caught by the state word, in O(1), until the header is handed out
	// again.
	b := buffer.Get()
	b.WriteString("x")
	b.Free()
	memtest.CheckPanic(t, "memkit/buffer: double free", func() { b.Free() })
	if err := b.Close(); err != buffer.ErrClosed {
		t.Fatalf("Close after Free = %v", err)
	}
	fp := mustFixed(t, 1, 64)
	c := fp.Checkout()
	c.Free()
	memtest.CheckPanic(t, "memkit/buffer: double free", func() { c.Free() })
	miss := fp.Checkout()
	fp.Checkout().Close() // the buffer back: miss is the only one out
	miss.Free()
	memtest.CheckPanic(t, "memkit/buffer: double free", func() { miss.Free() })
}

func TestRelease_FixedPoolStaleHeaderAfterTwoCheckouts(t *testing.T) {
	// A FixedPool alternates two headers per buffer: a stale Close is
	// rejected after one more checkout (TestFixedPool_StaleCloseAfter-
	// RecheckoutIsRejected), but after two the stale *Buffer is the new
	// owner's header, and a Close through it closes the new owner's
	// checkout. Only the checked build, which never reuses a header,
	// reports it.
	fp := mustFixed(t, 1, 64)
	stale := fp.Checkout()
	stale.Close()
	fp.Checkout().Close()
	if cur := fp.Checkout(); cur != stale {
		t.Fatal("documented behaviour changed: update the docs")
	}
	stale.Close()
}

func TestRelease_WriteAfterCloseMissesTheNextUser(t *testing.T) {
	// Close detaches a FixedPool header from its storage: a write through
	// the stale header grows into fresh memory, never into the next user's
	// buffer. (A write through a view kept past Close does land in the
	// storage, as it would with any pool; the checked build reports it.)
	fp := mustFixed(t, 1, 8)
	stale := fp.Checkout()
	stale.WriteString("abc")
	stale.Close()
	cur := fp.Checkout() // the other header of the same storage
	cur.WriteString("mine")
	stale.WriteString("stale!")
	if cur.String() != "mine" {
		t.Fatalf("a stale write reached the next user: %q", cur.String())
	}
	cur.Close()
}

func TestRelease_LeaksNeedTheCheckedBuild(t *testing.T) {
	for _, src := range []memkit.StatsSource{buffer.Default(), mustFixed(t, 1, 8)} {
		if _, err := memkit.Leaks(src); !errors.Is(err, memkit.ErrNotChecked) {
			t.Fatalf("Leaks(%T) = %v; want ErrNotChecked", src, err)
		}
	}
}
