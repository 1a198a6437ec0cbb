package traceotel_test

import (
	"context"
	"fmt"
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

// TestSpansMatchTheRecorder traces a request through the OpenTelemetry
// SDK, next to the SDK's own tracetest.SpanRecorder, in every shape the
// processor draws: spans nested with the tracer's spans on their
// goroutine, children on other goroutines, a span ended on another
// goroutine, one that overlaps a tracer span without nesting. It checks
// that the file holds the recorder's spans, with their names, kinds,
// attributes and status, and their parent relations: a child on its
// parent's track is inside it, any other has a flow from its parent's
// goroutine (or, as an async slice begun there, is on its track). Both
// importers load the file with the same slices and flows.
func TestSpansMatchTheRecorder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "otel.json")
	tr, err := tracer.New(path)
	require.NoError(t, err)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(rec),
		sdktrace.WithSpanProcessor(traceotel.NewSpanProcessor(traceotel.WithTracer(tr))),
	)
	otr := tp.Tracer("test")

	func() {
		defer tr.Span("serve")()
		ctx, root := otr.Start(context.Background(), "GET /users", trace.WithSpanKind(trace.SpanKindServer))
		defer root.End()
		defer tr.Span("handler")()
		func() { // a child on the same goroutine: nested
			_, auth := otr.Start(ctx, "auth")
			defer auth.End()
			tr.Span("check token")()
		}()
		var wg sync.WaitGroup
		for i := range 3 { // children on other goroutines, nested there
			wg.Go(func() {
				defer tr.Span("worker")()
				_, q := otr.Start(ctx, "SELECT users", trace.WithSpanKind(trace.SpanKindClient),
					trace.WithAttributes(attribute.Int("shard", i), attribute.String("db.system", "postgresql")))
				tr.Span("decode rows")()
				q.SetAttributes(attribute.Bool("cached", i == 0), attribute.StringSlice("tables", []string{"users", "roles"}))
				if i == 2 {
					q.SetStatus(codes.Error, "timeout")
				}
				q.End()
			})
		}
		wg.Wait()
		// Started on one goroutine, ended on another: async, with a flow.
		spans := make(chan trace.Span)
		wg.Go(func() {
			defer tr.Span("enqueue")()
			_, job := otr.Start(ctx, "job")
			spans <- job
		})
		wg.Go(func() { defer tr.Span("dequeue")(); (<-spans).End() })
		wg.Wait()
		// Ended while a tracer span inside it is open: async, begun on
		// its parent's goroutine.
		_, overlap := otr.Start(ctx, "overlap")
		end := tr.Span("outlives it")
		overlap.End()
		end()
		root.SetStatus(codes.Ok, "")
	}()
	require.NoError(t, tp.Shutdown(context.Background()))
	require.NoError(t, tr.Close())
	assert.Zero(t, tr.Stats().Unmatched)
	assert.Zero(t, tr.Stats().Forgotten)

	evs := tracecheck.Read(t, path)
	tracks := tracecheck.Tracks(t, evs)
	ops := tracecheck.Async(t, evs)

	// Where each span is in the file, by span id.
	type drawn struct {
		slice tracecheck.Slice // on a track, if async is false
		async bool
		tid   uint64 // its track, or the track its async slice began on
		args  map[string]any
	}
	where := map[string]drawn{}
	for tid, ss := range tracks {
		for _, sl := range ss {
			if id, ok := sl.Args["span_id"].(string); ok {
				require.NotContains(t, where, id)
				where[id] = drawn{slice: sl, tid: tid, args: sl.Args}
			}
		}
	}
	for _, op := range ops {
		id := op.Begin.Args["span_id"].(string)
		require.NotContains(t, where, id)
		args := map[string]any{}
		for _, m := range []map[string]any{op.Begin.Args, op.End.Args} {
			for k, v := range m {
				args[k] = v
			}
		}
		assert.Equal(t, "otel", op.Begin.Cat)
		where[id] = drawn{async: true, tid: op.Begin.Tid, args: args}
	}
	flows := map[string][2]tracecheck.Event{} // by id: s, f
	for _, e := range evs {
		if e.Ph == "s" || e.Ph == "f" {
			fl := flows[e.ID.String()]
			fl[map[string]int{"s": 0, "f": 1}[e.Ph]] = e
			flows[e.ID.String()] = fl
		}
	}

	spans := rec.Ended()
	require.Len(t, spans, 7)
	require.Len(t, where, len(spans), "every span the recorder got, and no other")
	async := map[string]bool{}
	nFlows := 0
	for _, s := range spans {
		id := s.SpanContext().SpanID().String()
		d, ok := where[id]
		require.True(t, ok, "%s is in the file", s.Name())
		async[s.Name()] = d.async
		assert.Equal(t, s.SpanKind().String(), d.args["kind"], s.Name())
		assert.Equal(t, s.SpanContext().TraceID().String(), d.args["trace_id"], s.Name())
		assert.Equal(t, s.Status().Code.String(), d.args["status"], s.Name())
		for _, kv := range s.Attributes() {
			assert.Contains(t, d.args, string(kv.Key), s.Name())
		}
		if !s.Parent().IsValid() {
			assert.NotContains(t, d.args, "parent_span_id")
			continue
		}
		assert.Equal(t, s.Parent().SpanID().String(), d.args["parent_span_id"], s.Name())
		p := where[s.Parent().SpanID().String()]
		require.False(t, p.async, "the root is on a track")
		switch {
		case !d.async && d.tid == p.tid:
			// Nested by position: the parent contains it on one track.
			assert.True(t, p.slice.Start <= d.slice.Start && d.slice.End <= p.slice.End, "%s inside its parent", s.Name())
		case d.async && d.tid == p.tid:
			// Begun on its parent's goroutine, its b is on that track:
			// no flow, which would bind to one slice at both ends.
		default:
			// A flow from the parent's goroutine to where it began.
			var fl [2]tracecheck.Event
			for _, f := range flows {
				if f[0].Name == s.Name() && f[0].Tid == p.tid && f[1].Tid == d.tid {
					fl = f
				}
			}
			require.NotEmpty(t, fl[0].Ph, "%s has a flow from its parent", s.Name())
			from, ok := tracecheck.Enclosing(tracks, p.tid, fl[0].Ts)
			require.True(t, ok)
			assert.True(t, p.slice.Start <= from.Start && from.End <= p.slice.End, "%s's flow starts inside its parent", s.Name())
			to, ok := tracecheck.Enclosing(tracks, d.tid, fl[1].Ts)
			require.True(t, ok)
			if !d.async {
				assert.Equal(t, d.slice, to, "%s's flow ends at it", s.Name())
			} else {
				assert.Equal(t, "enqueue", to.Name, "%s's flow ends where it began", s.Name())
			}
			nFlows++
		}
	}
	assert.Equal(t, map[string]bool{"GET /users": false, "auth": false, "SELECT users": false, "job": true, "overlap": true}, async)
	assert.Equal(t, 4, nFlows, "three queries and the job")
	assert.Len(t, flows, nFlows)

	// The server span contains the handler's tracer spans.
	root := where[spans[len(spans)-1].SpanContext().SpanID().String()]
	require.Equal(t, "GET /users", root.slice.Name)
	for _, name := range []string{"handler", "check token", "outlives it"} {
		in := tracecheck.SlicesNamed(tracks, name)
		require.Len(t, in, 1)
		assert.Equal(t, root.tid, in[0].Tid)
		assert.True(t, root.slice.Start <= in[0].Start && in[0].End <= root.slice.End, "%s inside the server span", name)
	}

	// Both importers see the same: the flows from the server span to
	// each query and to where the job began, and the two async slices
	// (catapult's importer in a heavy run only: see ImportQuick).
	perfetto, catapult := tracecheck.ImportQuick(t, path)
	want := []string{"GET /users -> SELECT users", "GET /users -> SELECT users", "GET /users -> SELECT users", "GET /users -> enqueue"}
	reports := []tracecheck.Report{perfetto[0]}
	if catapult != nil {
		reports = append(reports, catapult[0])
	}
	for _, r := range reports {
		assert.Equal(t, 4.0, r.Totals()["flows"], r["importer"])
		var got []string
		for _, f := range r["flows"].([]any) {
			f := f.(map[string]any)
			from, to := f["from"].(map[string]any), f["to"].(map[string]any)
			got = append(got, fmt.Sprint(from["slice"], " -> ", to["slice"]))
		}
		assert.ElementsMatch(t, want, got, r["importer"])
	}
	if catapult != nil {
		assert.Equal(t, 2.0, catapult[0].Totals()["asyncSlices"])
	}
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
	assert.Equal(t, []string{"X during", "B after stop"}, got, "the last one's end came after the file closed")
}

// nopProcessor makes the SDK record spans and does nothing with them:
// the baseline, since a provider without any processor records nothing.
type nopProcessor struct{}

func (nopProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (nopProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (nopProcessor) Shutdown(context.Context) error                  { return nil }
func (nopProcessor) ForceFlush(context.Context) error                { return nil }

// BenchmarkProcessor times OpenTelemetry spans started and ended on one
// goroutine through the SDK, a span alone ("span") and a child in an open
// parent ("child", the parent found in the processor's table): with a
// processor that does nothing (sdk), and with the traceotel processor
// recording into a real file, flushed with the timer stopped (traceotel),
// the spans drawn nested on the goroutine's track. The difference is what
// traceotel costs a span.
func BenchmarkProcessor(b *testing.B) {
	run := func(b *testing.B, proc sdktrace.SpanProcessor, child bool, flush func()) {
		otr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(proc)).Tracer("bench")
		ctx := context.Background()
		if child {
			var parent trace.Span
			ctx, parent = otr.Start(ctx, "parent")
			defer parent.End()
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_, s := otr.Start(ctx, "op")
			s.End()
			if flush != nil && i%512 == 511 {
				b.StopTimer()
				flush()
				b.StartTimer()
			}
		}
	}
	for _, child := range []bool{false, true} {
		name := map[bool]string{false: "span", true: "child"}[child]
		b.Run(name+"/sdk", func(b *testing.B) { run(b, nopProcessor{}, child, nil) })
		b.Run(name+"/traceotel", func(b *testing.B) {
			tr, err := tracer.New(filepath.Join(b.TempDir(), "bench.json"))
			require.NoError(b, err)
			defer tr.Close()
			run(b, traceotel.NewSpanProcessor(traceotel.WithTracer(tr)), child, func() { tr.Flush() })
		})
	}
}
