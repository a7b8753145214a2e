package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestDemo_JSON runs a short demo and checks what it reports: all three
// services answered every request with the reference bytes, the memkit
// service allocated far less per request than the naive one and no more
// than the careful standard-library one (allocation counts, not timings).
func TestDemo_JSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for seconds")
	}
	var out, errOut bytes.Buffer
	err := run(&out, &errOut, []string{"demo", "ingest", "--duration", "4s", "--rate", "400", "--conns", "4", "--json"})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, errOut.String())
	}
	var rep demoReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for i, p := range rep.phases() {
		if want := []string{"naive", "stdlib", "memkit"}[i]; p.Service != want {
			t.Errorf("phase %d is %q; want %q", i, p.Service, want)
		}
		if p.Requests < 100 || p.Mismatches != 0 || p.Errors != 0 {
			t.Errorf("%s: %d requests, %d mismatched, %d errors", p.Service, p.Requests, p.Mismatches, p.Errors)
		}
		// Open loop: every request due in the measured part was sent or
		// counted as unsent, whatever the service's speed.
		if budget := 4.0/3 - 0.8/3; float64(p.Requests+p.Unsent) < 400*budget*0.99 {
			t.Errorf("%s: %d sent + %d unsent; want every request due in %.2fs at 400/s", p.Service, p.Requests, p.Unsent, budget)
		}
		if p.Measured <= 0 {
			t.Errorf("%s: measured %vs", p.Service, p.Measured)
		}
	}
	if rep.Memkit.AllocsPerRequest > rep.Naive.AllocsPerRequest/4 {
		t.Errorf("memkit %.1f heap allocs per request, naive %.1f: want memkit at most a quarter",
			rep.Memkit.AllocsPerRequest, rep.Naive.AllocsPerRequest)
	}
	if rep.Memkit.AllocsPerRequest > rep.Stdlib.AllocsPerRequest {
		t.Errorf("memkit %.1f heap allocs per request, stdlib %.1f: want memkit at most stdlib",
			rep.Memkit.AllocsPerRequest, rep.Stdlib.AllocsPerRequest)
	}
	for _, want := range []string{"metrics:    http://127.0.0.1:", "debug page: http://127.0.0.1:"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
}

// TestDemo_ServicesAgree checks the three handlers byte for byte on every
// generated body, and on edge cases: an empty body, one reading, a body
// without a final newline, and, after those, a first body again (pooled
// scratch must not carry a request's state into the next).
func TestDemo_ServicesAgree(t *testing.T) {
	mk, err := newMemkitService(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	plain := newPlainService(t.Context())
	std := newStdlibService(t.Context())
	gen := demoBodies(16, 300)
	bodies := append(gen, []byte(""), []byte("1700000000000,21.5\n"), []byte("1700000000000,21.5\n1700000000001,80"), gen[0])
	for i, b := range bodies {
		path := "/ingest?device=s-" + string(rune('a'+i))
		var got [3]*httptest.ResponseRecorder
		for k, h := range []http.Handler{plain, std, mk} {
			got[k] = httptest.NewRecorder()
			h.ServeHTTP(got[k], httptest.NewRequest("POST", path, bytes.NewReader(b)))
		}
		if got[0].Code != 200 || got[1].Code != 200 || got[2].Code != 200 {
			t.Fatalf("body %d: status %d, %d and %d", i, got[0].Code, got[1].Code, got[2].Code)
		}
		naive := got[0].Body.String()
		if s := got[1].Body.String(); s != naive {
			t.Fatalf("body %d differs:\nnaive  %s\nstdlib %s", i, naive, s)
		}
		if m := got[2].Body.String(); m != naive {
			t.Fatalf("body %d differs:\nnaive  %s\nmemkit %s", i, naive, m)
		}
		if i == 0 && !strings.Contains(naive, `"anomalies":[{`) {
			t.Fatalf("body 0 has no anomaly to compare: %s", naive)
		}
	}
	// A malformed reading is a 400 in all three, never a panic.
	for _, h := range []http.Handler{plain, std, mk} {
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
	br = bufio.NewReader(strings.NewReader("HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno\n"))
	if b, code, err := readStatusResponse(br, nil); err != nil || code != 404 || string(b) != "no\n" {
		t.Fatalf("readStatusResponse of a 404 = %q, %d, %v", b, code, err)
	}
}

// TestDemo_RequestsBound checks --requests: each service's measured part
// stops after exactly that many answers, before --duration ends.
func TestDemo_RequestsBound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for seconds")
	}
	var out, errOut bytes.Buffer
	err := run(&out, &errOut, []string{"demo", "ingest", "--duration", "6s", "--rate", "400", "--conns", "3", "--requests", "301", "--json"})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, errOut.String())
	}
	var rep demoReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.phases() {
		// 301 requests at 400/s take about 0.75s of the 1.6s budget: the
		// report must say the time it measured, not the budget.
		if p.Requests != 301 || p.Measured <= 0 || p.Measured >= 1.5 {
			t.Errorf("%s: %d requests in %.2fs; want 301 in less than the 1.6s budget", p.Service, p.Requests, p.Measured)
		}
		if math.Abs(p.RequestsPerSec-float64(p.Requests)/p.Measured) > 1e-6*p.RequestsPerSec {
			t.Errorf("%s: %.1f requests/s; want requests / measured time", p.Service, p.RequestsPerSec)
		}
	}
	if err := run(&out, &errOut, []string{"demo", "ingest", "--requests", "-1"}); err == nil {
		t.Fatal("--requests -1 accepted")
	}
}

func TestFormatMicros(t *testing.T) {
	for _, tc := range []struct {
		us   float64
		want string
	}{
		{0.5, "0.5µs"}, {9.53, "9.5µs"}, {95.3, "95µs"}, {123.4, "120µs"}, {999, "1000µs"},
		{1234, "1.2ms"}, {56789, "57ms"}, {456789, "460ms"}, {2.5e6, "2.5s"},
	} {
		if got := formatMicros(tc.us); got != tc.want {
			t.Errorf("formatMicros(%v) = %q; want %q", tc.us, got, tc.want)
		}
	}
}

// TestPrintDemo checks the printed comparison: three columns with the
// careful standard-library service as memkit's baseline, human-readable
// peak heap, and the warning when a phase saw too few GC cycles.
func TestPrintDemo(t *testing.T) {
	ph := func(name string, gcs uint32, peak uint64) demoPhase {
		return demoPhase{Service: name, Measured: 2, Requests: 1000, RequestsPerSec: 500, P50: 150, P99: 900, P999: 1500,
			GCCycles: gcs, GCPer10k: float64(gcs) * 10, AllocsPerRequest: 4, PeakHeap: peak, FewGCs: gcs < minGCCycles}
	}
	rep := demoReport{Rate: 500, Conns: 4, Readings: 400, Warmup: "1s",
		Naive: ph("naive", 40, 3<<20), Stdlib: ph("stdlib", 20, 2<<20), Memkit: ph("memkit", 2, 1536<<10)}
	var b bytes.Buffer
	printDemo(&b, &rep)
	out := b.String()
	for _, want := range []string{
		"naive (ref.) stdlib memkit memkit/stdlib memkit/naive",
		"measured time 2.00s 2.00s 2.00s - -",
		"GC cycles 40 20 2 0.10 0.05",
		"peak heap 3MiB 2MiB 1.5MiB 0.75 0.50",
		"p50 latency 150µs 150µs 150µs 1.00 1.00",
		"p99.9 latency 1.5ms",
		"Too short for GC figures: memkit (2) saw fewer than 10 GC cycles",
		"memkit demo ingest: where careful code ties.",
	} {
		if !strings.Contains(squeeze(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rep.Memkit = ph("memkit", 12, 1<<20)
	b.Reset()
	printDemo(&b, &rep)
	if strings.Contains(b.String(), "Too short") || strings.Contains(b.String(), "WARNING") {
		t.Errorf("warned with every phase at 10 or more GC cycles and at its rate:\n%s", b.String())
	}
	rep.Stdlib.Warning = rateShortfall("the service", 300, 500, 7)
	b.Reset()
	printDemo(&b, &rep)
	if want := "stdlib service: WARNING: the service reached 300 of 500 operations/s and left 7 scheduled operations unsent"; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, b.String())
	}
}

// squeeze collapses runs of spaces, so tests can match tabwriter's columns.
func squeeze(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " \x00 ")), " ")
}
