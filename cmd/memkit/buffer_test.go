package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/memkit/memkit/internal/race"
)

func TestBufferWorkloadsRegistered(t *testing.T) {
	have := map[string]bool{}
	for i := range benches {
		have[benches[i].name()] = true
	}
	for _, name := range []string{
		"BufferJSON/ints=20000/impl=memkit",
		"BufferJSON/ints=20000/impl=viki-itoa",
		"BufferJSON/ints=20000/impl=strings-join",
		"BufferJSON/ints=20000/impl=bytebufferpool",
		"BufferJSON/ints=20000/impl=encoding-json",
		"BufferCheckout/size=4KiB/impl=memkit",
		"BufferCheckout/size=4KiB/impl=chan",
		"BufferCheckoutParallel/size=4KiB/impl=chan",
		"BufferGetWriteFree/size=1000B/impl=bytebufferpool",
		"BufferReader/op=ReadByte/seg=1KiB/impl=memkit",
		"BufferReader/op=Uint32BE/seg=1KiB/impl=bytes-reader",
		"BufferReader/op=LEB128/seg=1KiB/impl=memkit",
		"BufferReader/op=ReadBytes16/seg=1KiB/impl=memkit",
		"BufferReader/op=Skip16/seg=1KiB/impl=bytes-reader",
	} {
		if !have[name] {
			t.Errorf("bench %s is not registered", name)
		}
	}
}

// TestBufferJSON_ImplsWriteTheSameArray checks that every BufferJSON impl
// writes the same valid JSON array of 0 to 19,999, so that they are timed
// on the same work.
func TestBufferJSON_ImplsWriteTheSameArray(t *testing.T) {
	var want []byte
	for _, im := range bufferJSONImpls {
		var got []byte
		im.new()(func(b []byte) { got = append([]byte(nil), b...) })
		var ints []int
		if err := json.Unmarshal(got, &ints); err != nil || len(ints) != jsonInts || ints[jsonInts-1] != jsonInts-1 {
			t.Fatalf("%s: not the array of 0 to %d (%v)", im.name, jsonInts-1, err)
		}
		if want == nil {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Fatalf("%s writes other bytes than %s", im.name, bufferJSONImpls[0].name)
		}
	}
	if len(want) != 108891 {
		t.Fatalf("the array is %d bytes", len(want))
	}
}

func TestRun_BufferWorkloadsOfMemkitAllocateNothing(t *testing.T) {
	out, err := runCLI(t, "bench", "--filter", "Buffer(JSON|Checkout/|Reader/op=(ReadByte|LEB128))", "--benchtime", "20x", "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"\nBufferJSON/ints=20000\n", "\nBufferCheckout/size=4KiB\n", "\nBufferReader/op=LEB128/seg=1KiB\n"} {
		if !strings.Contains(out, w) {
			t.Fatalf("no %q table:\n%s", strings.TrimSpace(w), out)
		}
	}
	if !regexp.MustCompile(`(?m)^  memkit +\S+ +\d+ +0 `).MatchString(out) {
		t.Fatalf("no memkit row:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		// Under the race detector sync.Pool, under buffer.Get, drops Puts.
		if !race.Enabled && strings.HasPrefix(line, "  memkit ") && !regexp.MustCompile(`^  memkit +\S+ +\d+ +0 `).MatchString(line) {
			t.Errorf("memkit row allocates: %s", line)
		}
	}
}
