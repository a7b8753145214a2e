package buffer_test

import (
	"errors"
	"testing"

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
