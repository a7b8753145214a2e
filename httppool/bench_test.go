package httppool_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"sync"
	"testing"

	"github.com/memkit/memkit/httppool"
)

// syncPool is the BufferPool most ReverseProxy users write: a sync.Pool of
// []byte, which boxes the slice header on every Put.
type syncPool struct{ p sync.Pool }

func (s *syncPool) Get() []byte {
	if b, ok := s.p.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, httppool.DefaultSize)
}

func (s *syncPool) Put(b []byte) { s.p.Put(&b) }

// BenchmarkReverseProxy proxies one GET per op through an
// httputil.ReverseProxy on 127.0.0.1 to a backend that sends a body of the
// given size, and reads it whole: with no BufferPool (impl=none), a sync.Pool
// one (impl=sync) and httppool (impl=memkit). Client, proxy and backend run
// in this process, so allocs/op and GCs/10k-req count all three; the
// difference between columns is the proxy's copy buffers.
func BenchmarkReverseProxy(b *testing.B) {
	for _, size := range []int{64 << 10, 256 << 10, 1 << 20} {
		body := make([]byte, size)
		backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(body)
		}))
		target, _ := url.Parse(backend.URL)
		mk, _ := httppool.New()
		for _, impl := range []struct {
			name string
			pool httputil.BufferPool
		}{{"none", nil}, {"sync", &syncPool{}}, {"memkit", mk}} {
			b.Run(fmt.Sprintf("body=%dKiB/impl=%s", size>>10, impl.name), func(b *testing.B) {
				proxy := httputil.NewSingleHostReverseProxy(target)
				proxy.BufferPool = impl.pool
				front := httptest.NewServer(proxy)
				defer front.Close()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
				defer client.CloseIdleConnections()
				get := func() {
					res, err := client.Get(front.URL)
					if err != nil {
						b.Fatal(err)
					}
					n, _ := io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if n != int64(size) {
						b.Fatalf("%d bytes; want %d", n, size)
					}
				}
				for i := 0; i < 20; i++ { // warm connections and pools
					get()
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					get()
				}
				b.StopTimer()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.NumGC-before.NumGC)*10000/float64(b.N), "GCs/10k-req")
			})
		}
		backend.Close()
	}
}
