package benchmarks

// Peer "otel": the OpenTelemetry Go SDK as a service would configure it.
// On: a TracerProvider that samples every span (AlwaysSample) and hands
// ended spans to the batch span processor (default queue and batch sizes),
// whose exporter discards them, so the cost is the SDK's and not a
// network's. Off: the no-op TracerProvider, what instrumented code gets
// when no SDK is installed.
//
// Args are span attributes (trace.WithAttributes). A counter is a
// synchronous Int64Gauge of the metric SDK (with a manual reader, so
// nothing is exported) or of the no-op MeterProvider when off: OTel keeps
// counters in metrics, not in traces. An instant is span.AddEvent on a
// sampled span kept open for the whole benchmark round (past the SDK's
// limit of 128 events a span, the oldest is evicted: the cost stays the
// same).

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

func init() {
	register(&peer{
		name:  "otel",
		modes: []string{modeOn, modeOff},
		start: startOtel,
		loops: map[string]func(*testing.B){
			scSpan:             func(b *testing.B) { intLoop(b, otelSpan) },
			scSpanArgs:         func(b *testing.B) { intLoop(b, otelSpanArgs) },
			scNested:           func(b *testing.B) { intLoop(b, otelNested) },
			scSpanParallel:     func(b *testing.B) { intParallel(b, otelSpan) },
			scSpanArgsParallel: func(b *testing.B) { intParallel(b, otelSpanArgs) },
			scNestedParallel:   func(b *testing.B) { intParallel(b, otelNested) },
			scCounter:          func(b *testing.B) { intLoop(b, otelCounter) },
			scInstant:          func(b *testing.B) { intLoop(b, otelInstant) },
		},
	})
}

// discardExporter is a SpanExporter that drops every batch.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

var (
	otelTracer trace.Tracer
	otelGauge  metric.Int64Gauge
	otelOpen   trace.Span // the span instants are added to
)

func startOtel(b *testing.B, sc, mode string) func(*testing.B) {
	var shutdown []func(context.Context) error
	if mode == modeOn {
		tp := sdktrace.NewTracerProvider(
			sdktrace.WithSampler(sdktrace.AlwaysSample()),
			sdktrace.WithBatcher(discardExporter{}),
		)
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		otelTracer = tp.Tracer("bench")
		g, err := mp.Meter("bench").Int64Gauge("queue.depth")
		if err != nil {
			b.Fatal(err)
		}
		otelGauge = g
		shutdown = append(shutdown, tp.Shutdown, mp.Shutdown)
	} else {
		otelTracer = tracenoop.NewTracerProvider().Tracer("bench")
		g, err := metricnoop.NewMeterProvider().Meter("bench").Int64Gauge("queue.depth")
		if err != nil {
			b.Fatal(err)
		}
		otelGauge = g
	}
	_, otelOpen = otelTracer.Start(bg, "open")
	return func(b *testing.B) {
		otelOpen.End()
		for _, f := range shutdown {
			if err := f(bg); err != nil {
				b.Error(err)
			}
		}
	}
}

//go:noinline
func otelSpan(i int) {
	_, span := otelTracer.Start(bg, "span")
	defer span.End()
}

//go:noinline
func otelSpanArgs(i int) {
	_, span := otelTracer.Start(bg, "span", trace.WithAttributes(
		attribute.String(argKey, argVal), attribute.Int(argNKey, i)))
	defer span.End()
}

//go:noinline
func otelNested(i int) {
	ctx, span := otelTracer.Start(bg, "outer")
	defer span.End()
	otelNested2(ctx, i)
}

//go:noinline
func otelNested2(ctx context.Context, i int) {
	ctx, span := otelTracer.Start(ctx, "middle")
	defer span.End()
	otelNested3(ctx, i)
}

//go:noinline
func otelNested3(ctx context.Context, i int) {
	_, span := otelTracer.Start(ctx, "inner")
	defer span.End()
}

//go:noinline
func otelCounter(i int) { otelGauge.Record(bg, int64(i&1023)) }

//go:noinline
func otelInstant(i int) { otelOpen.AddEvent("tick") }
