package traceotel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/traceotel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Add the processor to the program's TracerProvider, next to its exporter:
// every span it records is also a slice in the trace, nested on the
// goroutine's track when it starts and ends there.
func Example() {
	var buf bytes.Buffer
	t, _ := tracer.NewWithWriter(&buf)
	tracer.SetDefault(t) // or tracer.Start("trace.json")

	tp := sdktrace.NewTracerProvider(
		// sdktrace.WithBatcher(exporter), as before
		sdktrace.WithSpanProcessor(traceotel.NewSpanProcessor()),
	)
	defer tp.Shutdown(context.Background())

	_, span := tp.Tracer("shop").Start(context.Background(), "checkout")
	span.End()
	tracer.Stop()

	var evs []struct{ Name, Ph, Cat string }
	json.Unmarshal(buf.Bytes(), &evs)
	for _, e := range evs {
		if e.Cat == "otel" {
			fmt.Println(e.Ph, e.Name)
		}
	}
	// Output:
	// X checkout
}
