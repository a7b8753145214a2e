package prom_test

import (
	"io"
	"net/http/httptest"
	"testing"

	"github.com/memkit/memkit"
	"github.com/memkit/memkit/bytepool"
	"github.com/memkit/memkit/prom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// BenchmarkCollect64Classes measures one scrape of a collector for an
// allocator with 64 size classes (12 + 8×64 = 524 series):
//
//   - op=collect: Collect alone, the collector's own cost plus
//     client_golang's metric construction (src.ReadStats is a copy);
//   - op=gather: a registry's Gather, which adds client_golang's checks,
//     conversion to protobuf and sorting;
//   - op=http: a whole /metrics request through promhttp in the text format;
//   - src=bytepool: op=collect over a real bytepool.Pool with 65 classes,
//     whose ReadStats takes each shard lock in turn, never all at once.
func BenchmarkCollect64Classes(b *testing.B) {
	const classes = 64
	const series = 12 + 8*classes
	fake := prom.NewCollector("fake", newFakeSource(classes))

	b.Run("op=collect", func(b *testing.B) {
		benchCollect(b, fake, series)
	})
	b.Run("op=gather", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(fake)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("op=http", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(fake)
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{DisableCompression: true}))
		defer srv.Close()
		client := srv.Client()
		b.ReportAllocs()
		for b.Loop() {
			resp, err := client.Get(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			b.ReportMetric(float64(n), "B/scrape")
		}
	})
	b.Run("src=bytepool", func(b *testing.B) {
		// 256 B to 64 KiB at 8 classes per doubling: 65 classes, the
		// nearest to 64 bytepool's powers of two allow.
		pool, err := bytepool.New(bytepool.WithMinSize(256), bytepool.WithMaxSize(64<<10), bytepool.WithClassesPerDoubling(8))
		if err != nil {
			b.Fatal(err)
		}
		var st memkit.Stats
		pool.ReadStats(&st)
		for _, c := range st.Classes {
			pool.Put(pool.Get(int(c.Size)))
		}
		benchCollect(b, prom.NewCollector("pool", pool), 12+8*len(st.Classes))
		b.ReportMetric(float64(len(st.Classes)), "classes")
	})
}

// benchCollect times c.Collect into a channel with room for every series,
// drained after each call.
func benchCollect(b *testing.B, c prometheus.Collector, series int) {
	ch := make(chan prometheus.Metric, series)
	b.ReportAllocs()
	for b.Loop() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
	b.ReportMetric(float64(series), "series")
}
