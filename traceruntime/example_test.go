package traceruntime_test

import (
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/traceruntime"
)

// Sample the runtime for as long as the traced work runs.
func ExampleStart() {
	dir, err := os.MkdirTemp("", "traceruntime-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := tracer.Start(filepath.Join(dir, "trace.json")); err != nil {
		log.Fatal(err)
	}
	defer tracer.Stop()
	defer traceruntime.Start(100 * time.Millisecond)()

	defer tracer.Span("work")()
	// ...
	// Output:
}
