//go:build memkitdebug

package buffer_test

import (
	"testing"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/internal/memtest"
)

const msgUseAfter = "memkit/buffer: use of a Buffer after Free or Close"

func TestDebug_UseAfterFreePanics(t *testing.T) {
	b := buffer.Get()
	b.WriteString("x")
	b.Free()
	for name, f := range map[string]func(){
		"Write":       func() { b.Write([]byte("x")) },
		"WriteString": func() { b.WriteString("x") },
		"WriteByte":   func() { b.WriteByte('x') },
		"Bytes":       func() { b.Bytes() },
		"Len":         func() { b.Len() },
		"String":      func() { _ = b.String() },
		"Reset":       func() { b.Reset() },
		"AppendInt":   func() { b.AppendInt(1, 10) },
		"JSON":        func() { j := buffer.NewJSON(b); j.Int(1) },
	} {
		t.Run(name, func(t *testing.T) { memtest.CheckPanic(t, msgUseAfter, f) })
	}
}

func TestDebug_UseAfterCloseOfACheckoutPanics(t *testing.T) {
	p, err := buffer.NewFixedPool(1, 64)
	if err != nil {
		t.Fatal(err)
	}
	old := p.Checkout()
	old.Close()
	for range 3 { // however often the buffer is checked out again
		cur := p.Checkout()
		memtest.CheckPanic(t, msgUseAfter, func() { old.WriteString("stale") })
		if err := old.Close(); err != buffer.ErrClosed {
			t.Fatalf("stale Close = %v", err)
		}
		cur.Close()
	}
}
