package httppool_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"

	"github.com/memkit/memkit/httppool"
)

// A ReverseProxy whose copy buffers come from bytepool.
func Example() {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from the backend")
	}))
	defer backend.Close()
	target, _ := url.Parse(backend.URL)

	pool, err := httppool.New()
	if err != nil {
		panic(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.BufferPool = pool
	front := httptest.NewServer(proxy)
	defer front.Close()

	res, err := http.Get(front.URL)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(string(body))
	// Output: hello from the backend
}
