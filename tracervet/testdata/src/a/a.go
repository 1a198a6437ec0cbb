package a

import "github.com/gotracer/tracer"

type other struct{}

func (other) Span(string) func() { return func() {} }

func bad(t *tracer.Tracer, r *tracer.FlightRecorder) {
	defer tracer.Span("x")          // want `defer tracer.Span\(...\) starts the span when the function returns and never ends it`
	defer tracer.Begin("x")         // want `defer tracer.Begin`
	defer t.Span("x", tracer.Arg{}) // want `defer tracer.Span`
	defer r.Begin("x")              // want `defer tracer.Begin`
}

func good(t *tracer.Tracer, o other) {
	defer tracer.Span("x")()
	defer t.Begin("x")(tracer.Arg{})
	end := tracer.Span("x")
	defer end()
	defer tracer.Instant("x")
	defer o.Span("x") // not the tracer's
}
