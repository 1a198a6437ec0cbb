// Package benchmark shows how a benchmark writes its own trace with
// tracetest: decode_test.go's BenchmarkDecode records a span per batch of
// b.N iterations, and the spans decode records itself nest under them.
//
//	go test -run '^$' -bench Decode ./examples/benchmark -args -tracer.out=bench.json
//
// writes examples/benchmark/bench.json (go test runs in the package's
// directory); open it at https://ui.perfetto.dev.
package benchmark

import (
	"encoding/json"

	"github.com/gotracer/tracer"
)

// An Order is what Decode reads.
type Order struct {
	ID    int      `json:"id"`
	Items []string `json:"items"`
	Total float64  `json:"total"`
}

// Decode parses an order and checks it, each step a span.
func Decode(data []byte) (Order, error) {
	defer tracer.Span("decode", tracer.Int("bytes", len(data)))()
	var o Order
	if err := parse(data, &o); err != nil {
		return o, err
	}
	validate(&o)
	return o, nil
}

func parse(data []byte, o *Order) error {
	defer tracer.Span("parse")()
	return json.Unmarshal(data, o)
}

func validate(o *Order) {
	defer tracer.Span("validate", tracer.Int("items", len(o.Items)))()
	if o.Total < 0 {
		o.Total = 0
	}
}
