// Package tracer is a stand-in for github.com/gotracer/tracer in the
// analyzer's tests: the same names, no behaviour.
package tracer

type Arg struct{}

type Tracer struct{}

type FlightRecorder struct{ *Tracer }

func Span(name string, args ...Arg) func(...Arg)     { return func(...Arg) {} }
func LongSpan(name string, args ...Arg) func(...Arg) { return func(...Arg) {} }

func (t *Tracer) Span(name string, args ...Arg) func(...Arg)     { return func(...Arg) {} }
func (t *Tracer) LongSpan(name string, args ...Arg) func(...Arg) { return func(...Arg) {} }

func Instant(name string, args ...Arg) {}
