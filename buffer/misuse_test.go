package buffer_test

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// The misuse table of package buffer: each mistake a user can make with a
// Buffer, a FixedPool, a Slice or a Reader, what each build does about it,
// and a test that makes it beside another live buffer that must come
// through intact. memtest.RunMistakes runs it in the build in use and keeps
// the README's safety table equal to it.

// witness is a live buffer of the pool beside the one a mistake concerns,
// filled with a pattern; its check reports whether the pattern is intact.
type witness struct {
	b    *buffer.Buffer
	want string
}

func newWitness(b *buffer.Buffer, seed int) witness {
	w := witness{b: b, want: fmt.Sprintf("witness %d: %x", seed, seed*0x9e37)}
	b.WriteString(w.want)
	return w
}

func (w witness) intact() error {
	if got := string(w.b.Bytes()); got != w.want {
		return fmt.Errorf("a live buffer holds %q, want %q", got, w.want)
	}
	return nil
}

// releaseCorrupts skips the row in the release build, whose table cell
// says the mistake is not caught and harms another allocation: only the
// checked build has a behaviour to assert.
func releaseCorrupts(t testing.TB) {
	if !checked.Enabled {
		t.Skip("not caught by the release build: see the row's release cell")
	}
}

const msgDouble = "memkit/buffer: double free"

func bufferMistakes() []memtest.Mistake {
	return []memtest.Mistake{
		{
			Name:    "second Free of a Buffer",
			Release: "panic `memkit/buffer: double free` until the header is handed out again",
			Checked: "DoubleFree (headers are never reused)",
			Panic:   msgDouble, Op: "Free", Kind: checked.DoubleFree,
			Setup: func(t testing.TB) (func(), func() error) {
				p := mustPool(t)
				b, w := p.Get(), newWitness(p.Get(), 1)
				b.WriteString("mine")
				b.Free()
				return func() { b.Free() }, w.intact
			},
		},
		{
			Name:    "second Close",
			Release: "returns `ErrClosed`, the pool unchanged",
			Checked: "the same",
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 2, 64)
				b, w := fp.Checkout(), newWitness(fp.Checkout(), 2)
				b.Close()
				return func() {
					if err := b.Close(); err != buffer.ErrClosed {
						t.Errorf("second Close = %v, want ErrClosed", err)
					}
				}, w.intact
			},
		},
		{
			Name:    "second Free of a FixedPool buffer",
			Release: "panic `memkit/buffer: double free`",
			Checked: "DoubleFree",
			Panic:   msgDouble, Op: "Free", Kind: checked.DoubleFree,
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 2, 64)
				b, w := fp.Checkout(), newWitness(fp.Checkout(), 3)
				b.Free()
				return func() { b.Free() }, w.intact
			},
		},
		{
			Name:    "Close through a stale *Buffer after one more Checkout",
			Release: "returns `ErrClosed` (each buffer alternates two headers)",
			Checked: "the same (every checkout has a header of its own)",
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 1, 64)
				stale := fp.Checkout()
				stale.Close()
				w := newWitness(fp.Checkout(), 4)
				return func() {
					if err := stale.Close(); err != buffer.ErrClosed {
						t.Errorf("stale Close = %v, want ErrClosed", err)
					}
				}, w.intact
			},
		},
		{
			Name:    "Close through a stale *Buffer after two more Checkouts",
			Release: "not caught: the header serves the new owner, whose checkout it closes",
			Checked: "returns `ErrClosed`",
			Setup: func(t testing.TB) (func(), func() error) {
				releaseCorrupts(t)
				fp := mustFixed(t, 1, 64)
				stale := fp.Checkout()
				stale.Close()
				fp.Checkout().Close()
				w := newWitness(fp.Checkout(), 5)
				return func() {
					if err := stale.Close(); err != buffer.ErrClosed {
						t.Errorf("stale Close = %v, want ErrClosed", err)
					}
				}, w.intact
			},
		},
		{
			Name:    "write through a Buffer after Free",
			Release: "not caught: the write takes fresh storage, never another buffer's",
			Checked: "StaleHandle",
			Op:      "WriteString", Kind: checked.StaleHandle,
			Setup: func(t testing.TB) (func(), func() error) {
				p := mustPool(t)
				b, w := p.Get(), newWitness(p.Get(), 6)
				b.Free()
				return func() { b.WriteString("late") }, w.intact
			},
		},
		{
			Name:    "write through a FixedPool Buffer after Close",
			Release: "not caught: the buffer's next Checkout detaches the stale header, so the write takes fresh memory, never the next user's buffer",
			Checked: "StaleHandle",
			Op:      "Write", Kind: checked.StaleHandle,
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 1, 64)
				b := fp.Checkout()
				b.Close()
				w := newWitness(fp.Checkout(), 7)
				return func() { b.Write([]byte("late")) }, w.intact
			},
		},
		{
			Name:    "Free of a copied Buffer",
			Release: "not caught: the copy returns the original's storage",
			Checked: "ForeignFree",
			Op:      "Free", Kind: checked.ForeignFree,
			Setup: func(t testing.TB) (func(), func() error) {
				p := mustPool(t)
				b, w := p.Get(), newWitness(p.Get(), 8)
				b.WriteString("shared")
				cp := copyOf(b)
				return func() { cp.Free() }, w.intact
			},
		},
		{
			Name:    "write through a view of a FixedPool buffer after Close",
			Release: "not caught: the bytes land in the idle buffer",
			Checked: "UseAfterFree, with the stacks, at the Checkout that takes the buffer (or memkit.Leaks)",
			Op:      "Checkout", Kind: checked.UseAfterFree,
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 2, 64)
				b, w := fp.Checkout(), newWitness(fp.Checkout(), 9)
				b.WriteString("abc")
				view := b.Bytes()
				b.Close()
				return func() {
					view[1] = 'x'
					fp.Checkout()
				}, w.intact
			},
		},
		{
			Name:    "write past a FixedPool buffer through unsafe",
			Release: "not caught: the bytes land in the next buffer",
			Checked: "Overflow at Close (a 16-byte guard after each buffer)",
			Op:      "Close", Kind: checked.Overflow,
			Setup: func(t testing.TB) (func(), func() error) {
				releaseCorrupts(t)
				fp := mustFixed(t, 2, 64)
				b, w := fp.Checkout(), newWitness(fp.Checkout(), 10)
				b.WriteString("x")
				past := unsafe.Slice(unsafe.SliceData(b.Bytes()), b.Cap()+1)
				past[b.Cap()] = 1
				return func() { b.Close() }, w.intact
			},
		},
		{
			Name:    "Truncate past the length",
			Release: "panic `memkit/buffer: Truncate out of range`",
			Checked: "the same",
			Panic:   "memkit/buffer: Truncate out of range",
			Setup: func(t testing.TB) (func(), func() error) {
				fp := mustFixed(t, 2, 64)
				b, w := fp.Checkout(), newWitness(fp.Checkout(), 11)
				b.WriteString("abc")
				return func() { b.Truncate(4) }, w.intact
			},
		},
		{
			Name:    "Grow past what the system can serve",
			Release: "panic `bytes.ErrTooLarge` (`bytes.Buffer: too large`), asked of the kernel before anything is reserved, the Buffer unchanged; a Strict FixedPool buffer never reserves: nothing changes",
			Checked: "the same",
			Panic:   "bytes.Buffer: too large",
			Setup: func(t testing.TB) (func(), func() error) {
				p := mustPool(t)
				b, w := p.Get(), newWitness(p.Get(), 13)
				b.WriteString("mine")
				return func() { b.Grow(hostileSize) }, func() error {
					if b.String() != "mine" {
						return fmt.Errorf("the Buffer holds %q, want %q", b.String(), "mine")
					}
					return w.intact()
				}
			},
		},
		{
			Name:    "GetSize past what the system can serve",
			Release: "panic `bytes.ErrTooLarge`, asked of the kernel before anything is reserved",
			Checked: "the same",
			Panic:   "bytes.Buffer: too large",
			Setup: func(t testing.TB) (func(), func() error) {
				p := mustPool(t)
				w := newWitness(p.Get(), 14)
				return func() { p.GetSize(hostileSize) }, w.intact
			},
		},
		{
			Name:    "Slice.PushOwned of a buffer bytepool did not hand out",
			Release: "not caught: Slice.Free gives it to bytepool, which keeps it or counts a bad free",
			Checked: "ForeignFree",
			Op:      "PushOwned", Kind: checked.ForeignFree,
			Setup: func(t testing.TB) (func(), func() error) {
				var s buffer.Slice
				w := newWitness(buffer.Get(), 12)
				foreign := make([]byte, 128)
				t.Cleanup(func() { w.b.Free() })
				return func() { s.PushOwned(foreign) }, w.intact
			},
		},
		{
			Name:    "Reader call with a negative count",
			Release: "panic `memkit/buffer: negative read count`",
			Checked: "the same",
			Panic:   "memkit/buffer: negative read count",
			Setup: func(t testing.TB) (func(), func() error) {
				s := buffer.NewSlice([]byte("abc"), []byte("def"))
				r := s.NewReader()
				r.Skip(2)
				return func() { r.Skip(-1) }, func() error {
					if b, err := r.ReadBytes(4); err != nil || string(b) != "cdef" {
						return fmt.Errorf("the Reader moved: %q, %v", b, err)
					}
					return nil
				}
			},
		},
	}
}

// TestMistakes runs the misuse table in the build in use: go test and go
// test -tags memkitdebug.
func TestMistakes(t *testing.T) {
	memtest.RunMistakes(t, "buffer", bufferMistakes())
}

// copyOf makes the copy of a Buffer that go vet reports in user code (a
// Buffer must not be copied), through reflect, so a test can make that
// mistake on purpose.
func copyOf(b *buffer.Buffer) *buffer.Buffer {
	cp := new(buffer.Buffer)
	reflect.ValueOf(cp).Elem().Set(reflect.ValueOf(b).Elem())
	return cp
}
