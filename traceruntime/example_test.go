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
	path := filepath.Join(os.TempDir(), "traceruntime-example.json")
	if err := tracer.Start(path); err != nil {
		log.Fatal(err)
	}
	defer os.Remove(path)
	defer tracer.Stop()
	defer traceruntime.Start(100 * time.Millisecond)()

	defer tracer.Span("work")()
	// ...
	// Output:
}
