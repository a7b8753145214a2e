package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/memkit/memkit/internal/proc"
	"math/bits"
	"net"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// This file is the demo's load generator and its measurements. The
// generator speaks HTTP/1.1 over raw keep-alive connections with requests
// encoded once up front, so that its own allocations are a few per request
// and the process-wide counts the demo reports are the server's.

// latencyHist is a log-linear histogram of durations in nanoseconds: 16
// buckets per power of two, so a percentile is read to within 6.25%.
// Recording is an array increment; each connection has its own histogram.
type latencyHist struct {
	counts [64 * histSub]uint64
	n      uint64
	max    uint64
}

const histSub = 16

func histBucket(v uint64) int {
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(v) - 5 // v >> e is in [16, 32)
	return (e+1)*histSub + int(v>>uint(e)) - histSub
}

// histUpper is the largest value bucket i holds.
func histUpper(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	e := i/histSub - 1
	m := uint64(i%histSub + histSub)
	return (m+1)<<uint(e) - 1
}

func (h *latencyHist) record(d time.Duration) {
	v := uint64(d)
	h.counts[histBucket(v)]++
	h.n++
	h.max = max(h.max, v)
}

func (h *latencyHist) merge(o *latencyHist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the upper bound of the bucket holding quantile q.
func (h *latencyHist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n-1)) + 1
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(histUpper(i), h.max))
		}
	}
	return time.Duration(h.max)
}

// loadResult is what the generator saw in one phase.
type loadResult struct {
	requests   uint64
	mismatches uint64 // responses that differ from the expected bytes
	errors     uint64
	misses     uint64 // the key-value demo's GETs answered 404
	missed     uint64 // requests due in the run and never sent (the sender gave up)
	firstErr   error
	elapsed    time.Duration
	lat        latencyHist
}

// drive sends requests to addr at rate requests per second, spread over
// conns keep-alive connections, open loop (see openLoop), for d or until
// limit requests have been answered (0: no limit). Request i on a
// connection is reqs[i%len(reqs)] and its response body must equal
// want[i%len(want)].
func drive(addr string, rate, conns int, d time.Duration, limit int, reqs, want [][]byte) *loadResult {
	return openLoop(realClock{}, rate, conns, d, func(c int, sched *schedule, r *loadResult) error {
		// Connection c sends its share of limit: limit/conns, and one
		// more for the first limit%conns connections.
		share := 0
		if limit > 0 {
			share = limit / conns
			if c < limit%conns {
				share++
			}
			if share == 0 {
				return nil
			}
		}
		return runConn(addr, sched, share, c, reqs, want, r)
	})
}

// openLoop runs conn for each of conns senders at rate operations per
// second in all, each on its own timetable (schedule) kept with clk, staggered across one
// interval, and adds up what they saw. Each latency is measured from the
// operation's due time, so a service that falls behind shows it in its
// percentiles and in the rate it reached instead of slowing the senders
// down. Operations still unsent d after the end are counted in missed.
func openLoop(clk clock, rate, conns int, d time.Duration, conn func(c int, sched *schedule, r *loadResult) error) *loadResult {
	per := make([]loadResult, conns)
	var wg sync.WaitGroup
	start := time.Now()
	interval := time.Duration(float64(time.Second) * float64(conns) / float64(rate))
	for c := range per {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &per[c]
			sched := newSchedule(clk, start.Add(interval*time.Duration(c)/time.Duration(conns)), interval, start.Add(d), d)
			r.firstErr = conn(c, sched, r)
			r.missed = sched.missed
			if r.firstErr != nil {
				r.errors++
			}
		}()
	}
	wg.Wait()
	total := &loadResult{elapsed: time.Since(start)}
	for i := range per {
		r := &per[i]
		total.requests += r.requests
		total.mismatches += r.mismatches
		total.misses += r.misses
		total.errors += r.errors
		total.missed += r.missed
		if total.firstErr == nil {
			total.firstErr = r.firstErr
		}
		total.lat.merge(&r.lat)
	}
	return total
}

// runConn is one connection's loop: send when due, read, compare.
func runConn(addr string, sched *schedule, limit, id int, reqs, want [][]byte, r *loadResult) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 64<<10)
	body := make([]byte, 0, 64<<10)
	for i := id; limit == 0 || r.requests < uint64(limit); i++ {
		due, ok := sched.wait()
		if !ok {
			return nil
		}
		k := i % len(reqs)
		if _, err := conn.Write(reqs[k]); err != nil {
			return err
		}
		body, err = readResponse(br, body[:0])
		if err != nil {
			return err
		}
		r.lat.record(time.Since(due))
		r.requests++
		if !bytes.Equal(body, want[k]) {
			r.mismatches++
		}
	}
	return nil
}

var errBadResponse = errors.New("demo: malformed HTTP response")

// readResponse reads one HTTP/1.1 200 response with a Content-Length body
// and appends the body to buf; any other status is an error. It allocates
// nothing once buf is large enough.
func readResponse(br *bufio.Reader, buf []byte) ([]byte, error) {
	buf, code, err := readStatusResponse(br, buf)
	if err == nil && code != 200 {
		err = fmt.Errorf("demo: response status %d", code)
	}
	return buf, err
}

// readStatusResponse is readResponse for any status: it returns the status
// code beside the body.
func readStatusResponse(br *bufio.Reader, buf []byte) ([]byte, int, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return buf, 0, err
	}
	if len(line) < 13 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return buf, 0, fmt.Errorf("demo: response %q", bytes.TrimSpace(line))
	}
	code, ok := parseInt(line[9:12])
	if !ok {
		return buf, 0, fmt.Errorf("demo: response %q", bytes.TrimSpace(line))
	}
	n := -1
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return buf, 0, err
		}
		if len(line) <= 2 { // the blank line ending the headers
			break
		}
		const cl = "content-length:"
		if len(line) > len(cl) && bytes.EqualFold(line[:len(cl)], []byte(cl)) {
			n = 0
			for _, c := range bytes.TrimSpace(line[len(cl):]) {
				if c < '0' || c > '9' {
					return buf, 0, errBadResponse
				}
				n = n*10 + int(c-'0')
			}
		}
	}
	if n < 0 {
		if code != 200 {
			return buf, int(code), nil // an error status without a body
		}
		return buf, 0, errBadResponse
	}
	start := len(buf)
	if cap(buf)-start < n {
		buf = append(buf, make([]byte, n)...)
	} else {
		buf = buf[:start+n]
	}
	_, err = ioReadFull(br, buf[start:])
	return buf, int(code), err
}

func ioReadFull(br *bufio.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := br.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// encodeRequest is the raw HTTP/1.1 request POST path with body.
func encodeRequest(path string, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString("POST " + path + " HTTP/1.1\r\nHost: demo\r\nContent-Type: text/plain\r\nContent-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}

// gcWatch measures the runtime across one phase: GC cycles and pause time,
// heap allocations (objects and bytes), and the peak of live heap, sampled
// every few milliseconds with runtime/metrics, which does not allocate once
// its samples exist.
type gcWatch struct {
	start, end runtime.MemStats
	cpu        time.Duration // process CPU time over the phase, if known
	cpuOK      bool
	peak       uint64
	stop       chan struct{}
	done       chan struct{}
}

func startGCWatch() *gcWatch {
	w := &gcWatch{stop: make(chan struct{}), done: make(chan struct{})}
	runtime.GC()
	runtime.ReadMemStats(&w.start)
	w.cpu, w.cpuOK = proc.CPU()
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		defer close(w.done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(samples)
			if v := samples[0].Value; v.Kind() == metrics.KindUint64 {
				w.peak = max(w.peak, v.Uint64())
			}
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

func (w *gcWatch) finish() {
	close(w.stop)
	<-w.done
	runtime.ReadMemStats(&w.end)
	end, ok := proc.CPU()
	w.cpu, w.cpuOK = end-w.cpu, ok && w.cpuOK
}

func (w *gcWatch) gcCycles() uint32 { return w.end.NumGC - w.start.NumGC }
func (w *gcWatch) pause() time.Duration {
	return time.Duration(w.end.PauseTotalNs - w.start.PauseTotalNs)
}
func (w *gcWatch) mallocs() uint64    { return w.end.Mallocs - w.start.Mallocs }
func (w *gcWatch) allocBytes() uint64 { return w.end.TotalAlloc - w.start.TotalAlloc }
