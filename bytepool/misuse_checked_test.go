//go:build memkitdebug

package bytepool_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/memtest"
)

// The misuse suite of the checked build: one test per mistake, each
// asserting the report. A bytepool buffer has no handle apart from the
// slice itself, so there is no stale-handle mistake to make: a stale slice
// put back is a double free, written to is a write after free.

// checkMisuse fails t unless m reports kind for op, with the stacks that
// explain it: where the buffer was allocated (by the test function named
// test), and, with freed, where it was first put back.
func checkMisuse(t *testing.T, m *checked.Misuse, op, kind, test string, freed bool) {
	t.Helper()
	memtest.CheckMisuse(t, m, "bytepool", op, kind, test, freed)
}

// getPut is a Pool's or a Cache's Get and Put.
type getPut struct {
	name string
	get  func(int) []byte
	put  func([]byte)
}

// eachFront runs f on every policy, through the Pool and through a Cache.
// The pools have one shard, so a Put buffer is the next Get's.
func eachFront(t *testing.T, f func(t *testing.T, p *bytepool.Pool, gp getPut)) {
	for _, pc := range policies {
		for _, front := range []string{"pool", "cache"} {
			t.Run("policy="+pc.name+"/front="+front, func(t *testing.T) {
				p := mustNew(t, pc.opts...)
				gp := getPut{front, p.Get, p.Put}
				if front == "cache" {
					c := p.NewCache()
					gp = getPut{front, c.Get, c.Put}
				}
				f(t, p, gp)
			})
		}
	}
}

func TestMisuse_DoubleFree(t *testing.T) {
	eachFront(t, func(t *testing.T, p *bytepool.Pool, gp getPut) {
		for _, n := range []int{0, 100, 64 << 10, bytepool.DefaultMaxSize + 1} {
			b := gp.get(n)
			gp.put(b)
			checkMisuse(t, misuseOf(func() { gp.put(b) }), "Put", checked.DoubleFree, "TestMisuse_DoubleFree", true)
			// The report changed nothing: the buffer is handed out once.
			if x, y := gp.get(n), gp.get(n); addr(x) == addr(y) {
				t.Fatalf("n=%d: one buffer handed out twice after a double free", n)
			}
		}
	})
}

func TestMisuse_ForeignFree(t *testing.T) {
	eachFront(t, func(t *testing.T, p *bytepool.Pool, gp getPut) {
		// A class's capacity: the release build would take it for its own.
		for _, n := range []int{128, 100, bytepool.DefaultMaxSize + 1} {
			foreign := make([]byte, n)
			m := misuseOf(func() { gp.put(foreign) })
			checkMisuse(t, m, "Put", checked.ForeignFree, "", false)
			if !m.Alloc.Empty() || m.Addr != addr(foreign) {
				t.Fatalf("foreign free report %+v", m)
			}
		}
		checkMisuse(t, misuseOf(func() { gp.put(nil) }), "Put", checked.ForeignFree, "", false)
	})
}

func TestMisuse_MovedStart(t *testing.T) {
	eachFront(t, func(t *testing.T, p *bytepool.Pool, gp getPut) {
		b := gp.get(96)
		// b[16:] has the 80-byte class's capacity: the release build would
		// file it there in an Elastic pool.
		m := misuseOf(func() { gp.put(b[16:]) })
		checkMisuse(t, m, "Put", checked.MovedFree, "TestMisuse_MovedStart", false)
		if m.Addr != addr(b)+16 || !strings.Contains(m.Detail, "byte 16") {
			t.Fatalf("moved free report: %v", m)
		}
		// The start stayed, the capacity did not.
		m = misuseOf(func() { gp.put(b[:0:64]) })
		checkMisuse(t, m, "Put", checked.MovedFree, "TestMisuse_MovedStart", false)
		if !strings.Contains(m.Detail, "capacity is 64") {
			t.Fatalf("capacity report: %v", m)
		}
		gp.put(b) // the real buffer is still accepted
	})
}

func TestMisuse_WriteAfterFree(t *testing.T) {
	eachFront(t, func(t *testing.T, p *bytepool.Pool, gp getPut) {
		b := gp.get(100)
		gp.put(b)
		b[5] = 'x' // after Put, while the buffer waits in the quarantine
		_, err := memkit.Leaks(p)
		var m *checked.Misuse
		if !errors.As(err, &m) {
			t.Fatalf("Leaks = %v; want the write after free", err)
		}
		checkMisuse(t, m, "memkit.Leaks", checked.UseAfterFree, "TestMisuse_WriteAfterFree", true)
		if m.Addr != addr(b) || !strings.Contains(m.Detail, "byte 5 of the freed block is 0x78") {
			t.Fatalf("write after free report: %v", m)
		}
		b[5] = checked.PoisonByte // undo, so the quarantine lets it go
	})
}

func TestMisuse_Overflow(t *testing.T) {
	eachFront(t, func(t *testing.T, p *bytepool.Pool, gp getPut) {
		b := gp.get(100)
		b[:cap(b)][105] = 7 // through a view past the length
		m := misuseOf(func() { gp.put(b) })
		checkMisuse(t, m, "Put", checked.Overflow, "TestMisuse_Overflow", false)
		if !strings.Contains(m.Detail, "byte 105 of the 112-byte buffer") {
			t.Fatalf("overflow report: %v", m)
		}
		// Growing a buffer by append within its capacity is no overflow:
		// it is put back whole.
		c := gp.get(100)
		c = append(c, make([]byte, 12)...)
		gp.put(c)
	})
}

func TestMisuse_Leak(t *testing.T) {
	eachFront(t, func(t *testing.T, p *bytepool.Pool, gp getPut) {
		kept := gp.get(100)
		gp.put(gp.get(200))
		leaks, err := memkit.Leaks(p)
		if err != nil || len(leaks) != 1 {
			t.Fatalf("Leaks = %v, %v; want one", leaks, err)
		}
		l := leaks[0]
		if l.Allocator != "bytepool" || l.Addr != addr(kept) || l.Size != 100 ||
			!strings.Contains(l.Stack, "bytepool_test.TestMisuse_Leak") {
			t.Fatalf("leak %v", l)
		}
		gp.put(kept)
		if leaks, _ := memkit.Leaks(p); len(leaks) != 0 {
			t.Fatalf("Leaks after the Put: %v", leaks)
		}
	})
}

func TestMisuse_DefaultPoolReportsLeaks(t *testing.T) {
	b := bytepool.Get(300)
	leaks, err := memkit.Leaks(bytepool.Default())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range leaks {
		found = found || l.Addr == addr(b)
	}
	if !found {
		t.Fatalf("the default pool's leaks %v lack the live buffer", leaks)
	}
	bytepool.Put(b)
}
