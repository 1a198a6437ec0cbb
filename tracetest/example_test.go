package tracetest_test

import (
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
