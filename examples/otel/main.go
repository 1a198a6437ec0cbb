// Command otel traces a web request instrumented with OpenTelemetry, the
// way otelhttp instruments a handler, and with tracer's own spans, through
// traceotel: the server span is drawn on the handler's goroutine with the
// handler's spans nested in it, the queries run on goroutines of their own
// nested there with a flow from the request, and a job handed to a worker
// is an async slice. It leaves otel.json in the working directory: open it
// at https://ui.perfetto.dev or in chrome://tracing.
package main

import (
	"context"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/traceotel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

var otr trace.Tracer

// serverSpan wraps a handler in a server span, as otelhttp.NewHandler does.
func serverSpan(name string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tracer.SetGoroutineName("http handler")
		ctx, span := otr.Start(r.Context(), name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.route", r.URL.Path)))
		defer span.End()
		h(w, r.WithContext(ctx))
	}
}

// query stands for an instrumented database call.
func query(ctx context.Context, shard int) {
	_, span := otr.Start(ctx, "SELECT orders", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.Int("shard", shard)))
	defer span.End()
	time.Sleep(time.Duration(300+200*shard) * time.Microsecond)
	tracer.Span("decode rows")()
}

var jobs = make(chan trace.Span, 8)

func orders(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	func() {
		defer tracer.Span("parse request")()
		time.Sleep(100 * time.Microsecond)
	}()
	var wg sync.WaitGroup
	for shard := range 3 {
		wg.Go(func() {
			tracer.SetGoroutineName("query")
			query(ctx, shard)
		})
	}
	wg.Wait()
	_, job := otr.Start(ctx, "send receipt", trace.WithSpanKind(trace.SpanKindProducer))
	jobs <- job // ended by the worker: an async slice
	defer tracer.Span("render")()
	time.Sleep(200 * time.Microsecond)
	w.Write([]byte("ok\n"))
}

func main() {
	if err := tracer.Start("otel.json", tracer.WithProcessName("otel example")); err != nil {
		log.Fatal(err)
	}
	defer tracer.Stop()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(traceotel.NewSpanProcessor()))
	defer tp.Shutdown(context.Background())
	otr = tp.Tracer("shop")

	var worker sync.WaitGroup
	worker.Go(func() {
		tracer.SetGoroutineName("mailer")
		for job := range jobs {
			func() {
				defer tracer.Span("send mail")()
				time.Sleep(500 * time.Microsecond)
			}()
			job.End()
		}
	})
	srv := httptest.NewServer(serverSpan("GET /orders", orders))
	defer srv.Close()
	for range 2 {
		resp, err := http.Get(srv.URL + "/orders")
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
	}
	close(jobs)
	worker.Wait()
}
