package buffer_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
)

// checkPutAgainPanics fails t unless b, a bytepool buffer that should be
// idle in the default pool, is refused as a double free: the release build
// sees the idle mark, the checked build its quarantine. It is how a test
// checks a buffer went back, now that the default pool's Frees are an
// estimate.
func checkPutAgainPanics(t *testing.T, b []byte) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		var m *checked.Misuse
		if err, ok := r.(error); ok && errors.As(err, &m) && m.Kind == checked.DoubleFree {
			return
		}
		if r != "memkit/bytepool: double free" {
			t.Fatalf("a second Put of a buffer given back: panic %v; want a double free", r)
		}
	}()
	bytepool.Put(b)
}

func TestPool_IdleHeaderKeepsItsStorage(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build never reuses a header")
	}
	p := mustPool(t, buffer.WithDefaultSize(1000))
	data := make([]byte, 1000)
	for range 100 {
		b := p.Get()
		b.Write(data)
		b.Free()
	}
	// Storage kept by idle headers counts as given back.
	st := readStats(p)
	if st.LiveObjects != 0 || st.Allocs != st.Frees || st.Allocs < 100 {
		t.Fatalf("after 100 Get+Write+Free: %+v", st)
	}
	// A write into a freed Buffer (a mistake) lands in the storage its
	// header kept; the next Get drops that storage instead of handing it
	// out, and does not panic.
	b := p.Get()
	b.Write(data)
	b.Free()
	b.Write([]byte("late")) // after Free
	c := p.Get()
	c.Write(data)
	if !bytes.Equal(c.Bytes(), data) {
		t.Fatal("a Buffer got after a write into a freed one lost its bytes")
	}
	c.Free()
}
