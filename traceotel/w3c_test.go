package traceotel_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/tracehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceContextWithOpenTelemetry puts a service traced with tracehttp
// (A) between an OpenTelemetry-instrumented client and an
// OpenTelemetry-instrumented service (B), both using OpenTelemetry's W3C
// propagator, and checks that OpenTelemetry sees one trace: B extracts the
// client's trace id, sampled flag and tracestate, with A's call as the
// parent, and A's spans carry the client's trace id.
func TestTraceContextWithOpenTelemetry(t *testing.T) {
	prop := propagation.TraceContext{}
	var got []trace.SpanContext // what B extracted, one per request
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, trace.SpanContextFromContext(prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))))
	}))
	defer b.Close()
	client := &http.Client{Transport: tracehttp.Transport(nil)}
	a := httptest.NewServer(tracehttp.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), "GET", b.URL, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	})))
	defer a.Close()

	path := filepath.Join(t.TempDir(), "a.json")
	// The longest flush interval: every span is an X event, whatever the
	// machine's load, with what its end carries in its args.
	require.NoError(t, tracer.Start(path, tracer.WithFlushInterval(10*time.Second)))
	defer tracer.Stop()
	state, err := trace.ParseTraceState("vendor=t61rcWkgMzE,other=1")
	require.NoError(t, err)
	var sent []trace.SpanContext
	for _, sampler := range []sdktrace.Sampler{sdktrace.AlwaysSample(), sdktrace.NeverSample()} {
		otr := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler)).Tracer("client")
		ctx, span := otr.Start(context.Background(), "call A", trace.WithSpanKind(trace.SpanKindClient))
		ctx = trace.ContextWithSpanContext(ctx, span.SpanContext().WithTraceState(state))
		req, err := http.NewRequestWithContext(ctx, "GET", a.URL+"/a", nil)
		require.NoError(t, err)
		prop.Inject(ctx, propagation.HeaderCarrier(req.Header))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		span.End()
		sent = append(sent, trace.SpanContextFromContext(ctx))
	}
	a.Close()
	require.NoError(t, tracer.Stop())

	evs := tracecheck.Read(t, path)
	outs := map[string]string{} // trace id -> A's traceparent.out
	for _, e := range tracecheck.Phase(tracecheck.Named(evs, "HTTP GET"), "X") {
		if e.Cat == "http.client" {
			out := e.Args["traceparent.out"].(string)
			outs[out[3:35]] = out
		}
	}
	require.Len(t, got, len(sent))
	for i, s := range sent {
		assert.True(t, got[i].IsValid())
		assert.True(t, got[i].IsRemote())
		assert.Equal(t, s.TraceID(), got[i].TraceID(), "B is in the client's trace")
		assert.Equal(t, s.IsSampled(), got[i].IsSampled(), "the client's sampled flag, as it was")
		assert.Equal(t, "vendor=t61rcWkgMzE,other=1", got[i].TraceState().String())
		assert.NotEqual(t, s.SpanID(), got[i].SpanID(), "B's parent is A's call, not the client's")
		out, ok := outs[s.TraceID().String()]
		require.True(t, ok, "A calls B in the client's trace")
		assert.Equal(t, got[i].SpanID().String(), out[36:52], "B's parent id is the one A recorded")
		servers := tracecheck.Filter(tracecheck.Phase(evs, "X"), func(e tracecheck.Event) bool {
			return e.Cat == "http" && e.Args["trace_id"] == s.TraceID().String()
		})
		assert.Len(t, servers, 1, "A's server span carries the client's trace id")
	}
}
