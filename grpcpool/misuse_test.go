package grpcpool_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/memkit/memkit/grpcpool"
	"github.com/memkit/memkit/internal/memtest"
	"github.com/memkit/memkit/internal/sysmem"
)

// Panics of the release build (grpcpool's panics are the same in the
// checked build).
const (
	panicDoublePut = "memkit/grpcpool: Put of a buffer already put back (its *[]byte holds nil): put each buffer from Get back once"
	panicNoMemory  = "memkit/grpcpool: Get(%d): more than the system can allocate now; lower grpc.MaxRecvMsgSize (server) or grpc.MaxCallRecvMsgSize (client) below what the machine can serve"
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

// mistakes is grpcpool's misuse table: every mistake the safety
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
	{
		Name:    "Get of more than the system can allocate",
		Release: "panic `memkit/grpcpool: Get(n): more than the system can allocate now; lower grpc.MaxRecvMsgSize …`, asked of the kernel before reserving (gRPC's `Get` cannot fail, and a shorter buffer would truncate the message)",
		Checked: "the same", Panic: fmt.Sprintf(panicNoMemory, 1<<62),
		Setup: func(t testing.TB) (func(), func() error) {
			p, _ := grpcpool.New()
			intact := bystanders(p, 6)
			return func() { p.Get(1 << 62) }, intact
		},
	},
}

func TestMistakes(t *testing.T) {
	// grpcpool's rows are in the misuse table of the repository's docs/safety.md.
	t.Chdir("..")
	memtest.RunMistakes(t, "grpcpool", mistakes)
}

// A size past what the machine has, below the largest the runtime would
// try (64 TiB), is refused with the memkit panic where the kernel refuses a
// mapping that large; the runtime would have ended the process with its
// unrecoverable "out of memory".
func TestPool_GetPastTheMachinePanics(t *testing.T) {
	if runtime.GOOS != "linux" || sysmem.MaxAlloc < 1<<46 {
		t.Skip("needs Linux on a 64-bit platform")
	}
	mode, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	if err != nil || strings.TrimSpace(string(mode)) == "1" {
		t.Skipf("the kernel overcommits without limit (overcommit_memory %q, %v)", mode, err)
	}
	p, _ := grpcpool.New()
	memtest.CheckPanic(t, fmt.Sprintf(panicNoMemory, 1<<46), func() { p.Get(1 << 46) })
}
