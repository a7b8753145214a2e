package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/memkit/memkit/arena"
	"github.com/memkit/memkit/buffer"
	"github.com/memkit/memkit/ringbuf"
)

// This file is the demo's service, written twice. It is a telemetry ingest
// endpoint: POST /ingest?device=ID with a body of "unix-millis,value" lines.
// The handler parses the readings into per-request objects, summarises them
// (count, min, max, mean, median, standard deviation), answers with a JSON
// summary listing the first anomalies (readings more than two standard
// deviations from the mean), and passes an audit record to a consumer
// goroutine. plainService does it the way most Go code does; memkitService
// with memkit: the body in a buffer.FixedPool item, the per-request objects
// in an arena from an arena.Pool, the answer written by buffer.JSON, the
// audit record through a ringbuf. Both must send identical bytes.

// maxBody bounds a request body; larger ones get 413.
const maxBody = 64 << 10

// maxAnomalies bounds the anomalies a response lists, so every response
// fits net/http's pre-chunking buffer and is sent with a Content-Length.
const maxAnomalies = 12

// Reading is one line of a request body.
type Reading struct {
	T int64   `json:"t"`
	V float64 `json:"v"`
}

// readingSummary is the arithmetic both services share, so that they differ only in
// where their memory comes from.
type readingSummary struct {
	count                    int
	min, max, mean, p50, std float64
}

// summarizeReadings computes the summary of values, sorting values in place.
func summarizeReadings(values []float64) readingSummary {
	s := readingSummary{count: len(values)}
	if len(values) == 0 {
		return s
	}
	var sum float64
	for _, v := range values {
		sum += v
	}
	s.mean = sum / float64(len(values))
	var sq float64
	for _, v := range values {
		sq += (v - s.mean) * (v - s.mean)
	}
	s.std = math.Sqrt(sq / float64(len(values)))
	slices.Sort(values)
	s.min, s.max = values[0], values[len(values)-1]
	s.p50 = values[len(values)/2]
	return s
}

func (s *readingSummary) anomalous(v float64) bool { return math.Abs(v-s.mean) > 2*s.std }

// plainResponse is the answer as plainService marshals it with
// encoding/json; memkitService writes the same fields in the same order.
type plainResponse struct {
	Device       string    `json:"device"`
	Count        int       `json:"count"`
	Min          float64   `json:"min"`
	Max          float64   `json:"max"`
	Mean         float64   `json:"mean"`
	P50          float64   `json:"p50"`
	Std          float64   `json:"std"`
	AnomalyCount int       `json:"anomaly_count"`
	Anomalies    []Reading `json:"anomalies"`
}

// plainService is the service on make, new, bytes.Buffer and encoding/json.
type plainService struct {
	audit   chan string
	audited atomic.Uint64
}

func newPlainService(ctx context.Context) *plainService {
	s := &plainService{audit: make(chan string, 1024)}
	go drainAudit(ctx, s.audit, &s.audited)
	return s
}

// drainAudit is the audit consumer of the services that send records over
// a channel: it counts them until ctx is done.
func drainAudit[T any](ctx context.Context, ch <-chan T, n *atomic.Uint64) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			n.Add(1)
		}
	}
}

// parseReadings calls add with each "unix-millis,value" line of data, in
// order, skipping empty lines. It stops at the first malformed line and
// returns it with ok == false.
func parseReadings(data []byte, add func(Reading)) (bad []byte, ok bool) {
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		if len(line) == 0 {
			continue
		}
		ts, vs, _ := bytes.Cut(line, []byte{','})
		t, ok := parseInt(ts)
		// string(vs) does not escape: the compiler converts it on the stack.
		v, err := strconv.ParseFloat(string(vs), 64)
		if !ok || err != nil {
			return line, false
		}
		add(Reading{T: t, V: v})
	}
	return nil, true
}

func (s *plainService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	device := r.URL.Query().Get("device")
	var readings []*Reading
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" {
			continue
		}
		ts, vs, _ := strings.Cut(line, ",")
		t, err1 := strconv.ParseInt(ts, 10, 64)
		v, err2 := strconv.ParseFloat(vs, 64)
		if err1 != nil || err2 != nil {
			http.Error(w, "bad reading "+strconv.Quote(line), http.StatusBadRequest)
			return
		}
		readings = append(readings, &Reading{T: t, V: v})
	}
	values := make([]float64, len(readings))
	for i, rd := range readings {
		values[i] = rd.V
	}
	sum := summarizeReadings(values)
	resp := plainResponse{Device: device, Count: sum.count, Min: sum.min, Max: sum.max,
		Mean: sum.mean, P50: sum.p50, Std: sum.std, Anomalies: []Reading{}}
	for _, rd := range readings {
		if sum.anomalous(rd.V) {
			resp.AnomalyCount++
			if len(resp.Anomalies) < maxAnomalies {
				resp.Anomalies = append(resp.Anomalies, *rd)
			}
		}
	}
	var out bytes.Buffer
	if err := json.NewEncoder(&out).Encode(&resp); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out.Bytes())
	select {
	case s.audit <- fmt.Sprintf("%s %d %d", device, sum.count, resp.AnomalyCount):
	case <-r.Context().Done():
	}
}

// ingest is the memkit service's per-request state. It lives in the
// request's arena and holds pointers (a string, slices, pointers into
// readings): the arena keeps them visible to the GC.
type ingest struct {
	device    string
	readings  []Reading
	values    []float64
	anomalies []*Reading
}

// auditRecord is the fixed-size record the memkit service passes through
// its ring: device name (truncated to 32 bytes), readings, anomalies.
const auditRecordSize = 32 + 8 + 8

// memkitService is the service on memkit.
type memkitService struct {
	bodies  *buffer.FixedPool
	arenas  *arena.Pool
	audit   *ringbuf.Ring
	audited atomic.Uint64
}

// jsonContentType is assigned to the header map directly: Header.Set would
// allocate a new []string for every response.
var jsonContentType = []string{"application/json"}

func newMemkitService(ctx context.Context, conns int) (*memkitService, error) {
	bodies, err := buffer.NewFixedPool(2*conns, 16<<10)
	if err != nil {
		return nil, err
	}
	audit, err := ringbuf.New(1024, auditRecordSize, ringbuf.WithPolicy(ringbuf.Block))
	if err != nil {
		return nil, err
	}
	s := &memkitService{bodies: bodies, arenas: arena.NewPool(), audit: audit}
	go func() {
		var rec [auditRecordSize]byte
		for {
			if _, err := s.audit.ReadContext(ctx, rec[:]); err != nil {
				return
			}
			s.audited.Add(1)
		}
	}()
	return s, nil
}

func (s *memkitService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in := s.bodies.Checkout()
	defer in.Close()
	if _, err := in.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody)); err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	a := s.arenas.Get()
	defer s.arenas.Put(a)
	req := arena.New[ingest](a)
	req.device = queryValue(r.URL.RawQuery, "device")
	req.readings = arena.MakeSlice[Reading](a, 0, 512)
	if line, ok := parseReadings(in.Bytes(), func(rd Reading) { req.readings = arena.Append(a, req.readings, rd) }); !ok {
		http.Error(w, "bad reading "+strconv.Quote(string(line)), http.StatusBadRequest)
		return
	}
	req.values = arena.MakeSlice[float64](a, len(req.readings), len(req.readings))
	for i := range req.readings {
		req.values[i] = req.readings[i].V
	}
	sum := summarizeReadings(req.values)
	count := 0
	for i := range req.readings {
		if sum.anomalous(req.readings[i].V) {
			count++
			if len(req.anomalies) < maxAnomalies {
				req.anomalies = arena.Append(a, req.anomalies, &req.readings[i])
			}
		}
	}

	out := buffer.Get()
	defer out.Free()
	j := buffer.NewJSON(out)
	j.BeginObject()
	j.Key("device")
	j.String(req.device)
	j.Key("count")
	j.Int(int64(sum.count))
	j.Key("min")
	j.Float(sum.min)
	j.Key("max")
	j.Float(sum.max)
	j.Key("mean")
	j.Float(sum.mean)
	j.Key("p50")
	j.Float(sum.p50)
	j.Key("std")
	j.Float(sum.std)
	j.Key("anomaly_count")
	j.Int(int64(count))
	j.Key("anomalies")
	j.BeginArray()
	for _, rd := range req.anomalies {
		j.BeginObject()
		j.Key("t")
		j.Int(rd.T)
		j.Key("v")
		j.Float(rd.V)
		j.EndObject()
	}
	j.EndArray()
	j.EndObject()
	if err := j.Err(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out.WriteByte('\n') // as json.Encoder does
	w.Header()["Content-Type"] = jsonContentType
	w.Write(out.Bytes())

	var rec [auditRecordSize]byte
	copy(rec[:32], req.device)
	binary.LittleEndian.PutUint64(rec[32:], uint64(sum.count))
	binary.LittleEndian.PutUint64(rec[40:], uint64(count))
	s.audit.WriteContext(r.Context(), rec[:])
}

// queryValue returns the raw value of key in a URL query without building
// url.Values. The demo's device names need no unescaping.
func queryValue(query, key string) string {
	for query != "" {
		var kv string
		kv, query, _ = strings.Cut(query, "&")
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v
		}
	}
	return ""
}

// parseInt parses a non-negative decimal integer.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// demoBodies returns n request bodies of lines readings each, generated
// from a fixed seed: values near 20 with a few spikes.
func demoBodies(n, lines int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	bodies := make([][]byte, n)
	t := int64(1_700_000_000_000)
	for i := range bodies {
		var b []byte
		for range lines {
			t += int64(rng.IntN(2000))
			v := 20 + rng.NormFloat64()*2
			if rng.IntN(50) == 0 {
				v += 15
			}
			b = strconv.AppendInt(b, t, 10)
			b = append(b, ',')
			b = strconv.AppendFloat(b, math.Round(v*100)/100, 'f', -1, 64)
			b = append(b, '\n')
		}
		bodies[i] = b
	}
	return bodies
}
