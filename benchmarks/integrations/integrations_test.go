// Package integrations measures what each integration adds per request,
// record or span, with tracing off and on, against the same work without
// the integration ("bare"):
//
//	go test -run '^$' -bench . -benchmem -count 3 -benchtime 200ms ./integrations
//
// Benchmarks are named Benchmark<Integration>/mode=<bare|off|on>. With
// tracing on, the tracer writes to a real file, flushed with the timer
// stopped every 512 operations, so the numbers are what the recording
// goroutine pays (the flusher's encoding is measured by the module's
// BenchmarkEncode). The runtime sampler's cost per sample is measured in
// its own package (traceruntime's BenchmarkSample), and tracetest records
// one span per benchmark batch, nothing per iteration.
package integrations

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/tracehttp"
	"github.com/gotracer/tracer/traceotel"
	"github.com/gotracer/tracer/traceslog"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// run runs op b.N times in each mode: "bare" calls bare, "off" and "on"
// call wrapped, with the default tracer stopped or started.
func run(b *testing.B, bare, wrapped func(i int), modes ...string) {
	if len(modes) == 0 {
		modes = []string{"bare", "off", "on"}
	}
	for _, mode := range modes {
		b.Run("mode="+mode, func(b *testing.B) {
			op := wrapped
			if mode == "bare" {
				op = bare
			}
			if strings.HasPrefix(mode, "on") {
				path := filepath.Join(b.TempDir(), "trace.json")
				if err := tracer.Start(path); err != nil {
					b.Fatal(err)
				}
				warmRings()
				defer func() {
					if st := tracer.Default().Stats(); st.Dropped > 0 {
						b.ReportMetric(float64(st.Dropped)/float64(b.N), "dropped/op")
					}
					tracer.Stop()
				}()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				op(i)
				if i%512 == 511 && tracer.Default() != nil {
					b.StopTimer()
					tracer.Flush()
					b.StartTimer()
				}
			}
		})
	}
}

// warmRings records from many goroutines, so that every P has its ring
// (allocated on the first event recorded there) before the clock starts,
// and flushes.
func warmRings() {
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for range 20 {
				tracer.Span("warm-up")()
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	tracer.Flush()
}

// discard is a ResponseWriter that keeps nothing, so the server benchmarks
// time the handler chain alone.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkHTTPServer serves one request through a Go 1.22 ServeMux, with
// and without Middleware.
func BenchmarkHTTPServer(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.PathValue("id"))
	})
	wrapped := tracehttp.Middleware(mux)
	req := httptest.NewRequest("GET", "/items/42", nil)
	w := &discard{h: http.Header{}}
	run(b, func(int) { mux.ServeHTTP(w, req) }, func(int) { wrapped.ServeHTTP(w, req) })
}

// BenchmarkHTTPClient sends one request through a RoundTripper that
// answers at once, with and without Transport.
func BenchmarkHTTPClient(b *testing.B) {
	resp := &http.Response{StatusCode: 200, Body: http.NoBody}
	base := roundTripFunc(func(*http.Request) (*http.Response, error) { return resp, nil })
	rt := tracehttp.Transport(base)
	req := httptest.NewRequest("GET", "http://example.com/items/42", nil)
	run(b, func(int) { base.RoundTrip(req) }, func(int) { rt.RoundTrip(req) })
}

// BenchmarkHTTPLoopback sends one request over a kept-alive loopback
// connection to a server in the same process: Middleware and Transport
// together ("off", "on"), against neither ("bare"), to put their cost next
// to a real round trip.
func BenchmarkHTTPLoopback(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.PathValue("id"))
	})
	bareSrv, tracedSrv := httptest.NewServer(mux), httptest.NewServer(tracehttp.Middleware(mux))
	defer bareSrv.Close()
	defer tracedSrv.Close()
	bare := &http.Client{Transport: &http.Transport{}}
	traced := &http.Client{Transport: tracehttp.Transport(&http.Transport{})}
	get := func(c *http.Client, url string) func(int) {
		return func(int) {
			resp, err := c.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	run(b, get(bare, bareSrv.URL+"/items/42"), get(traced, tracedSrv.URL+"/items/42"))
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// nopHandler is enabled from Info and does nothing.
type nopHandler struct{}

func (nopHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (nopHandler) Handle(context.Context, slog.Record) error    { return nil }
func (h nopHandler) WithAttrs([]slog.Attr) slog.Handler         { return h }
func (h nopHandler) WithGroup(string) slog.Handler              { return h }

// BenchmarkSlog logs one record with two attributes through a handler
// that does nothing, with and without the traceslog handler around it.
func BenchmarkSlog(b *testing.B) {
	ctx := context.Background()
	bare := slog.New(nopHandler{})
	wrapped := slog.New(traceslog.NewHandler(nopHandler{}, nil))
	log := func(l *slog.Logger) func(int) {
		return func(i int) {
			l.LogAttrs(ctx, slog.LevelInfo, "request done", slog.String("path", "/items"), slog.Int("n", i))
		}
	}
	run(b, log(bare), log(wrapped))
	b.Run("disabled level", func(b *testing.B) {
		run(b, func(i int) { bare.Debug("hidden", "n", i) }, func(i int) { wrapped.Debug("hidden", "n", i) })
	})
}

// BenchmarkContext carries an async operation to a callee through a
// context and records an instant of it there.
func BenchmarkContext(b *testing.B) {
	ctx := context.Background()
	run(b, nil, func(int) {
		op := tracer.AsyncBegin("op", tracer.Category("bench"))
		c := tracer.ContextWithAsync(ctx, op)
		tracer.AsyncFromContext(c).End()
	}, "off", "on")
}

// nopProcessor makes the SDK record spans and does nothing with them: the
// baseline of BenchmarkOTel, since a provider without any processor does
// not record spans at all.
type nopProcessor struct{}

func (nopProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (nopProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (nopProcessor) Shutdown(context.Context) error                  { return nil }
func (nopProcessor) ForceFlush(context.Context) error                { return nil }

// BenchmarkOTel starts and ends one sampled OpenTelemetry span through a
// provider with a processor that does nothing, with and without the
// traceotel processor next to it (no exporter: the SDK's own cost is the
// baseline).
func BenchmarkOTel(b *testing.B) {
	ctx := context.Background()
	bare := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(nopProcessor{})).Tracer("bench")
	wrapped := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(traceotel.NewSpanProcessor())).Tracer("bench")
	run(b, func(int) {
		_, s := bare.Start(ctx, "span")
		s.End()
	}, func(int) {
		_, s := wrapped.Start(ctx, "span")
		s.End()
	})
}
