package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestDemo_JSON runs a short demo and checks what it reports: both
// services answered every request with the reference bytes, and the memkit
// service allocated far less per request than the plain one (an allocation
// count, not a timing).
func TestDemo_JSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for seconds")
	}
	var out, errOut bytes.Buffer
	err := run(&out, &errOut, []string{"demo", "--duration", "4s", "--rate", "400", "--conns", "4", "--json"})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, errOut.String())
	}
	var rep demoReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, p := range []demoPhase{rep.Plain, rep.Memkit} {
		if p.Requests < 100 || p.Mismatches != 0 || p.Errors != 0 {
			t.Errorf("%s: %d requests, %d mismatched, %d errors", p.Service, p.Requests, p.Mismatches, p.Errors)
		}
	}
	if rep.Memkit.AllocsPerRequest > rep.Plain.AllocsPerRequest/4 {
		t.Errorf("memkit %.1f heap allocs per request, plain %.1f: want memkit at most a quarter",
			rep.Memkit.AllocsPerRequest, rep.Plain.AllocsPerRequest)
	}
	for _, want := range []string{"metrics:    http://127.0.0.1:", "debug page: http://127.0.0.1:"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
}

// TestDemo_ServicesAgree checks the two handlers byte for byte on every
// generated body, and on edge cases: an empty body, one reading.
func TestDemo_ServicesAgree(t *testing.T) {
	mk, err := newMemkitService(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	plain := newPlainService(t.Context())
	bodies := append(demoBodies(16, 300), []byte(""), []byte("1700000000000,21.5\n"))
	for i, b := range bodies {
		path := "/ingest?device=s-" + string(rune('a'+i))
		got := [2]*httptest.ResponseRecorder{httptest.NewRecorder(), httptest.NewRecorder()}
		plain.ServeHTTP(got[0], httptest.NewRequest("POST", path, bytes.NewReader(b)))
		mk.ServeHTTP(got[1], httptest.NewRequest("POST", path, bytes.NewReader(b)))
		if got[0].Code != 200 || got[1].Code != 200 {
			t.Fatalf("body %d: status %d and %d", i, got[0].Code, got[1].Code)
		}
		if p, m := got[0].Body.String(), got[1].Body.String(); p != m {
			t.Fatalf("body %d differs:\nplain  %s\nmemkit %s", i, p, m)
		}
	}
	// A malformed reading is a 400 in both, never a panic.
	for _, h := range []http.Handler{plain, mk} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/ingest?device=x", strings.NewReader("12,abc\n")))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%T: malformed body: status %d", h, rec.Code)
		}
	}
}

func TestLatencyHist_Quantiles(t *testing.T) {
	var h latencyHist
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {1, 1000 * time.Microsecond}} {
		got := h.quantile(tc.q)
		if got < tc.want || float64(got) > float64(tc.want)*1.0625 {
			t.Errorf("quantile(%v) = %v; want within 6.25%% above %v", tc.q, got, tc.want)
		}
	}
	for v := uint64(0); v < 1<<20; v = v*3/2 + 1 {
		if i := histBucket(v); histUpper(i) < v || (i > 0 && histUpper(i-1) >= v) {
			t.Fatalf("value %d in bucket %d: upper %d, previous upper %d", v, i, histUpper(i), histUpper(i-1))
		}
	}
}

func TestReadResponse(t *testing.T) {
	resp := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi"
	br := bufio.NewReader(strings.NewReader(resp))
	for _, want := range []string{"hello", "hi"} {
		got, err := readResponse(br, nil)
		if err != nil || string(got) != want {
			t.Fatalf("readResponse = %q, %v; want %q", got, err, want)
		}
	}
	br = bufio.NewReader(strings.NewReader("HTTP/1.1 500 Internal Server Error\r\n\r\n"))
	if _, err := readResponse(br, nil); err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("a 500 gave %v", err)
	}
}

// TestDemo_RequestsBound checks --requests: each service's measured part
// stops after exactly that many answers, before --duration ends.
func TestDemo_RequestsBound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for seconds")
	}
	var out, errOut bytes.Buffer
	err := run(&out, &errOut, []string{"demo", "--duration", "6s", "--rate", "400", "--conns", "3", "--requests", "301", "--json"})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, errOut.String())
	}
	var rep demoReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Plain.Requests != 301 || rep.Memkit.Requests != 301 {
		t.Fatalf("requests: plain %d, memkit %d; want 301 each", rep.Plain.Requests, rep.Memkit.Requests)
	}
	if err := run(&out, &errOut, []string{"demo", "--requests", "-1"}); err == nil {
		t.Fatal("--requests -1 accepted")
	}
}
