package traceotel_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/traceotel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestSpansBecomeAsyncSlices traces a request with concurrent child spans
// through the OpenTelemetry SDK, next to an in-memory exporter, and checks
// that every span is an async slice in the file with its ids, attributes
// and status, and that the exporter got the same spans.
func TestSpansBecomeAsyncSlices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "otel.json")
	tr, err := tracer.New(path)
	require.NoError(t, err)
	exported := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSyncer(exported),
		sdktrace.WithSpanProcessor(traceotel.NewSpanProcessor(traceotel.WithTracer(tr))),
	)
	otr := tp.Tracer("test")

	ctx, root := otr.Start(context.Background(), "GET /users", trace.WithSpanKind(trace.SpanKindServer))
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			_, q := otr.Start(ctx, "SELECT users", trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(attribute.Int("shard", i), attribute.String("db.system", "postgresql")))
			defer tr.Span("decode rows")()
			q.SetAttributes(attribute.Bool("cached", i == 0), attribute.Float64("ratio", 0.5),
				attribute.StringSlice("tables", []string{"users", "roles"}))
			if i == 2 {
				q.SetStatus(codes.Error, "timeout")
				q.RecordError(errors.New("timeout"))
			}
			q.End()
		})
	}
	wg.Wait()
	root.SetStatus(codes.Ok, "")
	root.End()
	require.Len(t, exported.GetSpans(), 4, "the exporter gets every span as before")
	require.NoError(t, tp.Shutdown(context.Background()))
	require.NoError(t, tr.Close())

	evs := tracecheck.Read(t, path)
	tracecheck.Tracks(t, evs)
	ops := tracecheck.Async(t, evs)
	require.Len(t, ops, 4)

	rootID := root.SpanContext().SpanID().String()
	byName := map[string][]tracecheck.AsyncOp{}
	for _, op := range ops {
		assert.Equal(t, "otel", op.Begin.Cat)
		assert.Equal(t, "0x"+trimZeros(op.Begin.Args["span_id"].(string)), op.Begin.Local(), "the async id is the span id")
		assert.Equal(t, root.SpanContext().TraceID().String(), op.Begin.Args["trace_id"])
		byName[op.Begin.Name] = append(byName[op.Begin.Name], op)
	}
	require.Len(t, byName["GET /users"], 1)
	r := byName["GET /users"][0]
	assert.Equal(t, "server", r.Begin.Args["kind"])
	assert.Equal(t, "Ok", r.End.Args["status"])
	assert.NotContains(t, r.Begin.Args, "parent_span_id")

	queries := byName["SELECT users"]
	require.Len(t, queries, 3)
	errs := 0
	for _, q := range queries {
		assert.Equal(t, "client", q.Begin.Args["kind"])
		assert.Equal(t, rootID, q.Begin.Args["parent_span_id"])
		assert.Equal(t, "postgresql", q.End.Args["db.system"])
		assert.Equal(t, 0.5, q.End.Args["ratio"])
		assert.Equal(t, `["users","roles"]`, q.End.Args["tables"])
		assert.Equal(t, q.End.Args["shard"] == 0.0, q.End.Args["cached"])
		assert.True(t, r.Begin.Ts <= q.Begin.Ts && q.End.Ts <= r.End.Ts, "a child within its parent's time")
		if q.End.Args["status"] == "Error" {
			errs++
			assert.Equal(t, "timeout", q.End.Args["status_description"])
		}
	}
	assert.Equal(t, 1, errs)

	_, catapult := tracecheck.Import(t, path)
	assert.Equal(t, 4.0, catapult[0].Totals()["asyncSlices"])
}

// trimZeros drops the leading zeros of a hex span id, as id2.local is
// written.
func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

// TestOffAndLateSpans checks that spans started with tracing off are left
// out, even when they end while it is on, and that a span ending after
// the tracer closed is harmless.
func TestOffAndLateSpans(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(traceotel.NewSpanProcessor()))
	defer tp.Shutdown(context.Background())
	otr := tp.Tracer("test")

	require.Nil(t, tracer.Default())
	_, before := otr.Start(context.Background(), "before")
	path := filepath.Join(t.TempDir(), "late.json")
	require.NoError(t, tracer.Start(path))
	before.End()
	_, during := otr.Start(context.Background(), "during")
	during.End()
	_, after := otr.Start(context.Background(), "after stop")
	require.NoError(t, tracer.Stop())
	after.End()

	evs := tracecheck.Read(t, path)
	var got []string
	for _, e := range evs {
		if e.Cat == "otel" {
			got = append(got, e.Ph+" "+e.Name)
		}
	}
	assert.Equal(t, []string{"b during", "e during", "b after stop"}, got, "the last one's end came after the file closed")
}
