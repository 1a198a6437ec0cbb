package a

import "github.com/gotracer/tracer"

type other struct{}

func (other) Span(string) func() { return func() {} }

func bad(t *tracer.Tracer, r *tracer.FlightRecorder) {
	defer tracer.Span("x")          // want `defer tracer.Span\(...\) starts the span when the function returns and never ends it`
	defer tracer.LongSpan("x")      // want `defer tracer.LongSpan`
	defer t.Span("x", tracer.Arg{}) // want `defer tracer.Span`
	defer r.LongSpan("x")           // want `defer tracer.LongSpan`
}

func good(t *tracer.Tracer, o other) {
	defer tracer.Span("x")()
	defer t.LongSpan("x")(tracer.Arg{})
	end := tracer.Span("x")
	defer end()
	defer tracer.Instant("x")
	defer o.Span("x") // not the tracer's
}
