package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestKVDemo_JSON runs the key-value demo small: three service processes
// (this test binary, re-run), every answer checked, every key read back.
func TestKVDemo_JSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three service processes for seconds")
	}
	var out, errOut bytes.Buffer
	err := run(&out, &errOut, []string{"demo", "--entries", "5000", "--duration", "1s", "--warmup", "200ms",
		"--rate", "400", "--conns", "2", "--memlimit", "0", "--json"})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, errOut.String())
	}
	var rep kvDemoReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rep.Services) != len(kvDemoServices) {
		t.Fatalf("%d services; want %d", len(rep.Services), len(kvDemoServices))
	}
	data := kvDataBytes(5000)
	for i, p := range rep.Services {
		if p.Service != kvDemoServices[i].name {
			t.Errorf("service %d is %q; want %q", i, p.Service, kvDemoServices[i].name)
		}
		// 400/s for 1s on two staggered connections: 400 requests due.
		if p.Requests+p.Unsent != 400 || p.Mismatches != 0 || p.Errors != 0 {
			t.Errorf("%s: %d requests + %d unsent, %d wrong answers, %d errors; want 400, 0, 0",
				p.Service, p.Requests, p.Unsent, p.Mismatches, p.Errors)
		}
		if p.Service != "fastcache" && (p.Lost != 0 || p.Misses != 0) {
			t.Errorf("%s: %d lost keys, %d GETs answered 404", p.Service, p.Lost, p.Misses)
		}
		if p.RSS == 0 || p.CPUPerRequest <= 0 || p.DataBytes < data*9/10 || p.DataBytes > data*11/10 {
			t.Errorf("%s: RSS %d, CPU/request %v, data %d (loaded %d)", p.Service, p.RSS, p.CPUPerRequest, p.DataBytes, data)
		}
	}
	var b bytes.Buffer
	printKVDemo(&b, &rep)
	for _, want := range []string{"stdlib fastcache memkit memkit/stdlib memkit/fastcache", "no GOMEMLIMIT", "forced GC CPU, full", "lost keys 0"} {
		if !strings.Contains(squeeze(b.String()), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

// TestKVService checks the demo service's answers on one store: PUT then
// GET reads back, an absent key is 404, a bad ID 400, another method 405.
func TestKVService(t *testing.T) {
	s := &kvService{store: must(newKVStore("stdmap", kvSizing{}))}
	do := func(method, path string, body []byte) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(method, path, bytes.NewReader(body)))
		return rec
	}
	for id := range uint64(20) {
		v := appendKVValue(nil, id, 3)
		if rec := do("PUT", "/kv/"+strconv.FormatUint(id, 10), v); rec.Code != http.StatusOK {
			t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
		}
	}
	for id := range uint64(20) {
		rec := do("GET", "/kv/"+strconv.FormatUint(id, 10), nil)
		if g, ok := checkKVValue(rec.Body.Bytes(), id); rec.Code != http.StatusOK || !ok || g != 3 {
			t.Fatalf("GET /kv/%d: %d, %d bytes", id, rec.Code, rec.Body.Len())
		}
	}
	for _, tc := range []struct {
		method, path string
		want         int
	}{{"GET", "/kv/99", 404}, {"GET", "/kv/x1", 400}, {"GET", "/kv/", 400}, {"POST", "/kv/1", 405}} {
		if rec := do(tc.method, tc.path, nil); rec.Code != tc.want {
			t.Errorf("%s %s: %d; want %d", tc.method, tc.path, rec.Code, tc.want)
		}
	}
}

// TestRun_HelpKV checks the help of the commands this issue added.
func TestRun_HelpKV(t *testing.T) {
	for _, args := range [][]string{{"heap", "-h"}, {"demo", "-h"}, {"demo", "ingest", "-h"}} {
		var out, errOut bytes.Buffer
		if err := run(&out, &errOut, args); err != nil || !strings.Contains(out.String(), "usage: memkit "+strings.Join(args[:len(args)-1], " ")) {
			t.Errorf("%v: %v\n%s", args, err, out.String())
		}
	}
	var out, errOut bytes.Buffer
	if err := run(&out, &errOut, []string{"heap", "--stores", "idmap,nope"}); err == nil || !strings.Contains(err.Error(), `unknown store "nope"`) {
		t.Errorf("heap --stores nope: %v", err)
	}
}
