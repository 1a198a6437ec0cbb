package tracetest_test

import (
	"fmt"
	"testing"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/tracetest"
)

func decode(b []byte) int {
	defer tracer.Span("decode")()
	return len(b)
}

// A benchmark that writes its trace when run with
// -args -tracer.out=bench.json: a span per batch of b.N iterations, with
// the spans of the code it calls inside. (The example has no output to
// check, so go test compiles it without running a second of benchmark.)
func ExampleStart() {
	benchmarkDecode := func(b *testing.B) {
		tracetest.Start(b)
		for range b.N {
			decode([]byte("{}"))
		}
	}
	testing.Benchmark(benchmarkDecode)
}

func serve(user string) {
	end := tracer.Span("serve", tracer.String("user", user))
	defer func() { end(tracer.Int("status", 200)) }()
	decode([]byte(`{"id":1}`))
}

// A test asserts on the spans the code under test recorded: their
// nesting and their args. In a test, pass its *testing.T to Record; an
// Example has none, so a benchmark run stands in for the test here.
func ExampleRecord() {
	var spans []tracetest.Span
	testing.Benchmark(func(b *testing.B) { // func TestServe(t *testing.T) {
		rec := tracetest.Record(b) //          rec := tracetest.Record(t)
		serve("ada")
		spans = rec.Spans()
	})
	for _, s := range spans {
		parent := "-"
		if s.Parent != nil {
			parent = s.Parent.Name
		}
		fmt.Printf("%s in %s, args %v\n", s.Name, parent, s.Args)
	}
	// Output:
	// serve in -, args map[status:200 user:ada]
	// decode in serve, args map[]
}
