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

func dropped(t *tracer.Tracer, r *tracer.FlightRecorder) {
	tracer.Span("x")                   // want `tracer.Span\(...\) drops the function that ends the span, which never ends`
	tracer.LongSpan("x", tracer.Arg{}) // want `tracer.LongSpan\(...\) drops`
	t.Span("x")                        // want `tracer.Span\(...\) drops`
	(r.LongSpan("x"))                  // want `tracer.LongSpan\(...\) drops`
}

func good(t *tracer.Tracer, o other) {
	defer tracer.Span("x")()
	defer t.LongSpan("x")(tracer.Arg{})
	end := tracer.Span("x")
	defer end()
	defer tracer.Instant("x")
	defer o.Span("x") // not the tracer's
	o.Span("x")       // not the tracer's
	tracer.Span("x")()
	tracer.Instant("x")
	_ = tracer.Span("x") // dropped on purpose
}
