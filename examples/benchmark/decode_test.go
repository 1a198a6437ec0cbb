package benchmark

import (
	"testing"

	"github.com/gotracer/tracer/tracetest"
)

// TestMain closes the trace file when the tests and benchmarks are done.
func TestMain(m *testing.M) { tracetest.Main(m) }

var order = []byte(`{"id":42,"items":["book","pen","lamp"],"total":31.5}`)

func TestDecode(t *testing.T) {
	tracetest.Start(t)
	o, err := Decode(order)
	if err != nil || o.ID != 42 || len(o.Items) != 3 {
		t.Fatalf("Decode = %+v, %v", o, err)
	}
}

// BenchmarkDecode gets a span per batch of b.N iterations in the trace.
func BenchmarkDecode(b *testing.B) {
	tracetest.Start(b)
	for range b.N {
		if _, err := Decode(order); err != nil {
			b.Fatal(err)
		}
	}
}
