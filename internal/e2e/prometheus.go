package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// PrometheusBinary returns the path of Debian's prometheus, under
// [Program]'s rule. In -short mode the test is skipped unless [Required].
func PrometheusBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() && !Required() {
		t.Skip("skipping a Prometheus end-to-end test in -short mode")
	}
	return Program(t, "prometheus", "prometheus")
}

// PromServer is a Prometheus server a test started on loopback.
type PromServer struct {
	URL    string // http://127.0.0.1:port
	output *SyncBuffer
	exited chan struct{} // closed when the process has exited
}

// StartPrometheus starts bin as a Prometheus server on a free loopback
// port, with its storage in a temporary directory, scraping every target
// each second. A target is the URL of a metrics endpoint, such as
// "http://127.0.0.1:8080/metrics": an httptest server, or a `memkit demo`
// started by the test. It returns once the server is ready; the server is
// stopped when the test ends, and its log is printed if the test failed.
func StartPrometheus(t testing.TB, bin string, targets ...string) *PromServer {
	t.Helper()
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n")
	for i, target := range targets {
		u, err := url.Parse(target)
		if err != nil || u.Host == "" {
			t.Fatalf("target %q: want a URL such as http://127.0.0.1:8080/metrics (%v)", target, err)
		}
		path := u.Path
		if path == "" {
			path = "/metrics"
		}
		fmt.Fprintf(&cfg, "  - job_name: target%d\n    scheme: %s\n    metrics_path: %q\n    static_configs:\n      - targets: [%q]\n",
			i, u.Scheme, path, u.Host)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	addr := FreeLoopbackAddr(t)
	p := &PromServer{URL: "http://" + addr, output: new(SyncBuffer), exited: make(chan struct{})}
	cmd := exec.Command(bin,
		"--config.file="+cfgPath,
		"--web.listen-address="+addr,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.console.templates="+filepath.Join(dir, "consoles"),
		"--web.console.libraries="+filepath.Join(dir, "console_libraries"),
	)
	cmd.Stdout = p.output
	cmd.Stderr = p.output
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Logf("started %s (pid %d) on %s, scraping %v", bin, cmd.Process.Pid, p.URL, targets)
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("prometheus output:\n%s", p.output.String())
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("prometheus exited before it was ready:\n%s", p.output.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready on %s after 30s:\n%s", p.URL, p.output.String())
		}
	}
}

// FreeLoopbackAddr returns a loopback address with a port nothing listens
// on, for a program that takes its listen address as a flag and cannot
// be told to pick a port itself.
func FreeLoopbackAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Sample is one series of an instant query's result.
type Sample struct {
	Metric map[string]string
	Value  float64
}

func (s Sample) String() string { return fmt.Sprintf("%v %v", s.Metric, s.Value) }

// Query runs an instant query on the server's HTTP API.
func (p *PromServer) Query(ctx context.Context, q string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %q: %s: %v", q, resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", q, resp.Status, body.Error)
	}
	if body.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %q, want vector", q, body.Data.ResultType)
	}
	out := make([]Sample, 0, len(body.Data.Result))
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v: %v", q, r.Value, err)
		}
		out = append(out, Sample{r.Metric, v})
	}
	return out, nil
}

// WaitFor runs q every 500ms until ok accepts its result, and fails the
// test if ctx ends first or the server rejects q (a syntax error).
func (p *PromServer) WaitFor(ctx context.Context, t testing.TB, q string, ok func([]Sample) bool) []Sample {
	t.Helper()
	var last []Sample
	for {
		r, err := p.Query(ctx, q)
		switch {
		case err == nil && ok(r):
			return r
		case err == nil:
			last = r
		case ctx.Err() == nil && strings.Contains(err.Error(), "400 Bad Request"):
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			if len(last) > 3 {
				last = last[:3]
			}
			t.Fatalf("query %q: no acceptable result before the deadline; last %v..., error %v", q, last, err)
		case <-p.exited:
			t.Fatalf("prometheus exited:\n%s", p.output.String())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Positive accepts a non-empty result whose every value is above zero.
func Positive(r []Sample) bool {
	for _, s := range r {
		if !(s.Value > 0) {
			return false
		}
	}
	return len(r) > 0
}

// SyncBuffer is a bytes.Buffer safe to write from a process's output
// copier while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
