package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// stdlibService is the demo's service written with care on the standard
// library alone, as a Go team that has profiled its allocations would: a
// sync.Pool of per-request scratch (the body's and the answer's
// bytes.Buffer, value slices of readings and values, and an encoding/json
// Encoder bound to the answer's buffer), bytes.Cut over the body instead
// of strings.Split, and audit records sent by value. It shares with
// memkitService what is not memory management (queryValue, parseInt, the
// header slice, the arithmetic), so that the two differ only in where their
// memory comes from. It is the column memkit's ratios are measured
// against; plainService is the naive reference.
type stdlibService struct {
	scratch sync.Pool // *stdlibScratch
	audit   chan stdlibAudit
	audited atomic.Uint64
}

// stdlibScratch is one request's reusable memory.
type stdlibScratch struct {
	body, out bytes.Buffer
	enc       *json.Encoder // writes to out
	readings  []Reading
	values    []float64
	resp      plainResponse
}

// stdlibAudit is the audit record, sent by value through a channel.
type stdlibAudit struct {
	device           string
	count, anomalies int
}

func newStdlibService(ctx context.Context) *stdlibService {
	s := &stdlibService{audit: make(chan stdlibAudit, 1024)}
	s.scratch.New = func() any {
		sc := &stdlibScratch{readings: make([]Reading, 0, 512)}
		sc.body.Grow(16 << 10)
		sc.enc = json.NewEncoder(&sc.out)
		// Never nil, so that an answer without anomalies says [] as
		// plainService's does, not null.
		sc.resp.Anomalies = make([]Reading, 0, maxAnomalies)
		return sc
	}
	go drainAudit(ctx, s.audit, &s.audited)
	return s
}

func (s *stdlibService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sc := s.scratch.Get().(*stdlibScratch)
	defer s.scratch.Put(sc)
	sc.body.Reset()
	if _, err := sc.body.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody)); err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	device := queryValue(r.URL.RawQuery, "device")
	sc.readings = sc.readings[:0]
	if line, ok := parseReadings(sc.body.Bytes(), func(rd Reading) { sc.readings = append(sc.readings, rd) }); !ok {
		http.Error(w, "bad reading "+strconv.Quote(string(line)), http.StatusBadRequest)
		return
	}
	sc.values = sc.values[:0]
	for i := range sc.readings {
		sc.values = append(sc.values, sc.readings[i].V)
	}
	sum := summarizeReadings(sc.values)
	resp := &sc.resp
	*resp = plainResponse{Device: device, Count: sum.count, Min: sum.min, Max: sum.max,
		Mean: sum.mean, P50: sum.p50, Std: sum.std, Anomalies: resp.Anomalies[:0]}
	for i := range sc.readings {
		if sum.anomalous(sc.readings[i].V) {
			resp.AnomalyCount++
			if len(resp.Anomalies) < maxAnomalies {
				resp.Anomalies = append(resp.Anomalies, sc.readings[i])
			}
		}
	}
	sc.out.Reset()
	if err := sc.enc.Encode(resp); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header()["Content-Type"] = jsonContentType
	w.Write(sc.out.Bytes())
	select {
	case s.audit <- stdlibAudit{device, sum.count, resp.AnomalyCount}:
	case <-r.Context().Done():
	}
}
