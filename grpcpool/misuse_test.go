package grpcpool_test

import (
	"fmt"
	"testing"

	"github.com/memkit/memkit/grpcpool"
	"github.com/memkit/memkit/internal/memtest"
)

// Panics of the release build (grpcpool's panics are the same in the
// checked build).
const (
	panicDoublePut = "memkit/grpcpool: Put of a buffer already put back (its *[]byte holds nil): put each buffer from Get back once"
)

// bystanders gets n live buffers of assorted sizes from p, fills each with
// its own pattern, and returns the check that they all still hold it.
func bystanders(p *grpcpool.Pool, n int) func() error {
	hs := make([]*[]byte, n)
	for i := range hs {
		hs[i] = p.Get(24 + 3000*i)
		memtest.Fill(*hs[i], uint64(i+1))
	}
	return func() error {
		for i, h := range hs {
			if err := memtest.Verify(*h, uint64(i+1)); err != nil {
				return fmt.Errorf("bystander %d: %w", i, err)
			}
		}
		return nil
	}
}

// mistakes is grpcpool's misuse table: every mistake the README's safety
// table lists for grpcpool, made as gRPC or a user would make it.
var mistakes = []memtest.Mistake{
	{
		Name:    "second Put of a `*[]byte`",
		Release: "panic `" + panicDoublePut + "` while the header is idle (an idle header holds nil, O(1))",
		Checked: "the same", Panic: panicDoublePut,
		Setup: func(t testing.TB) (func(), func() error) {
			p, _ := grpcpool.New()
			intact := bystanders(p, 6)
			h := p.Get(1000)
			p.Put(h)
			return func() { p.Put(h) }, func() error {
				if err := intact(); err != nil {
					return err
				}
				// The next two Gets share nothing.
				a, b := p.Get(1000), p.Get(1000)
				if a == b || memtest.Overlap(*a, *b) {
					return fmt.Errorf("two Gets after the double Put share a buffer")
				}
				return nil
			}
		},
	},
	{
		Name:    "second Put of a `*[]byte` after a Get took it again",
		Release: "not caught: the stale Put gives the new owner's buffer back (the header holds it), and the owner's own Put then panics as a second Put",
		Checked: "the same",
		Setup: func(t testing.TB) (func(), func() error) {
			p, _ := grpcpool.New()
			h := p.Get(1000)
			p.Put(h)
			if h2 := p.Get(1000); h2 != h {
				t.Skip("sync.Pool dropped the header (the race detector drops some on purpose)")
			}
			return func() { p.Put(h) }, nil
		},
	},
}

func TestMistakes(t *testing.T) {
	// grpcpool's rows are in the safety table of the repository's README.
	t.Chdir("..")
	memtest.RunMistakes(t, "grpcpool", mistakes)
}
