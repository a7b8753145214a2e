package httppool_test

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/httppool"
	"github.com/memkit/memkit/internal/checked"
	"github.com/memkit/memkit/internal/sysmem"
	"github.com/memkit/memkit/stats"
)

func TestNew_BadSize(t *testing.T) {
	_, err := httppool.New(httppool.WithSize(0))
	if err == nil || err.Error() != "memkit/httppool: WithSize(0): the size must be positive" {
		t.Fatalf("err = %v", err)
	}
}

// TestNew_SizeTheMachineCannotServe: issue 21 case 1. WithSize of more
// than the machine's memory was accepted, and the first Get ended the
// process with the runtime's fatal out-of-memory.
func TestNew_SizeTheMachineCannotServe(t *testing.T) {
	if math.MaxInt < 1<<46 || sysmem.Available(tib64) {
		t.Skip("needs a 64-bit system that refuses to map 64 TiB")
	}
	_, err := httppool.New(httppool.WithSize(int(tib64)))
	want := "memkit/httppool: WithSize(70368744177664): more than this machine can allocate now; a copy buffer needs no more than a few MiB"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v; want %q", err, want)
	}
}

// tib64 is 64 TiB (a variable, so that 32-bit platforms compile int(tib64)).
var tib64 = uint64(1) << 46

func TestPool_GetPutAllocatesNothing(t *testing.T) {
	if checked.Enabled {
		t.Skip("the checked build records a stack per Get")
	}
	p, _ := httppool.New()
	p.Put(p.Get())
	if n := testing.AllocsPerRun(1000, func() {
		var bp httputil.BufferPool = p // as ReverseProxy holds it
		b := bp.Get()
		b[0] = 1
		bp.Put(b)
	}); n != 0 {
		t.Fatalf("%v allocs per Get+Put", n)
	}
	if b := p.Get(); len(b) != httppool.DefaultSize {
		t.Fatalf("Get len %d", len(b))
	}
}

// TestPool_ReverseProxyBodiesIntact proxies bodies of 64 KiB to 1 MiB through
// a ReverseProxy with the pool, on loopback, and checks every byte, with
// several requests in flight.
func TestPool_ReverseProxyBodiesIntact(t *testing.T) {
	bp, _ := bytepool.New()
	p, _ := httppool.New(httppool.WithBytePool(bp))
	sizes := []int{64 << 10, 100_000, 256 << 10, 1 << 20}
	bodies := make([][]byte, len(sizes))
	for i, n := range sizes {
		bodies[i] = make([]byte, n)
		for j := range bodies[i] {
			bodies[i][j] = byte(i*7 + j*13)
		}
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost { // echo: the request body goes through the pool too
			body, _ := io.ReadAll(r.Body) // HTTP/1 ends the request body once the reply starts
			w.Write(body)
			return
		}
		var i int
		for i = range sizes {
			if r.URL.Path == "/"+string(rune('a'+i)) {
				break
			}
		}
		w.Write(bodies[i])
	}))
	defer backend.Close()
	target, _ := url.Parse(backend.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.BufferPool = p
	front := httptest.NewServer(proxy)
	defer front.Close()

	done := make(chan error, 8)
	for g := 0; g < 4; g++ {
		go func() {
			for k := 0; k < 8; k++ {
				i := (g + k) % len(sizes)
				var res *http.Response
				var err error
				if k%2 == 0 {
					res, err = http.Get(front.URL + "/" + string(rune('a'+i)))
				} else {
					res, err = http.Post(front.URL, "application/octet-stream", bytes.NewReader(bodies[i]))
				}
				if err != nil {
					done <- err
					return
				}
				got, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || !bytes.Equal(got, bodies[i]) {
					t.Errorf("body %d: %d bytes back, err %v", sizes[i], len(got), err)
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	var st stats.Stats
	bp.ReadStats(&st)
	if st.Grows == 0 || st.BadFrees != 0 {
		t.Fatalf("the proxy did not take its buffers from the pool: %d buffers made, %d bad Puts", st.Grows, st.BadFrees)
	}
}
