package corpus_test

import (
	"fmt"
	"io"

	"github.com/gotracer/tracer/cmd/tracer/internal/corpus"
)

// Ranging over the committed files, as an ordinary test does; the large
// ones are for benchmarks.
func ExampleFiles() {
	files, err := corpus.Files()
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		if f.Large {
			continue
		}
		r, err := f.Open()
		if err != nil {
			panic(err)
		}
		n, _ := io.Copy(io.Discard, r)
		r.Close()
		fmt.Printf("%-8s %s %v\n", f.Tool, f.Name, n > 0)
	}
	// Output:
	// go       go-build.json.gz true
	// node     node-server.json.gz true
	// node     node-workers.json.gz true
	// tsc      tsc6-trace.json.gz true
	// tsc      tsc7-trace.json.gz true
	// clang    clang-spans-cpp.json.gz true
	// clang    clang-ring-c.json.gz true
	// cmake    cmake-configure.json.gz true
	// webpack  webpack-small.json.gz true
	// chromium chromium-startup-small.json.gz true
}
