package tracer_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gotracer/tracer"
)

// names returns the names of the events of phase ph in a closed trace.
func names(trace []byte, ph string) []string {
	var events []struct{ Name, Ph string }
	if err := json.Unmarshal(trace, &events); err != nil {
		log.Fatal(err)
	}
	var out []string
	for _, e := range events {
		if e.Ph == ph {
			out = append(out, e.Name)
		}
	}
	return out
}

// A trace can go to any io.Writer: standard output, a connection, a buffer.
func ExampleNewWithWriter() {
	var buf bytes.Buffer
	t, err := tracer.NewWithWriter(&buf)
	if err != nil {
		log.Fatal(err)
	}
	t.Span("fetch")()
	t.Span("decode")()
	if err := t.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(names(buf.Bytes(), "X"))
	// Output: [fetch decode]
}

// A path ending in ".gz" writes a gzip file. A closed one is a single gzip
// member, which every reader, chrome://tracing included, reads.
func ExampleNew_gzip() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "trace.json.gz")

	t, err := tracer.New(path)
	if err != nil {
		log.Fatal(err)
	}
	t.Span("compressed")()
	if err := t.Close(); err != nil {
		log.Fatal(err)
	}

	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		log.Fatal(err)
	}
	var trace bytes.Buffer
	if _, err := trace.ReadFrom(zr); err != nil {
		log.Fatal(err)
	}
	fmt.Println(names(trace.Bytes(), "X"))
	// Output: [compressed]
}

// WithMaxFileSize and WithMaxFiles keep a long trace in a bounded number of
// files, each of which opens alone in the viewers.
func ExampleWithMaxFileSize() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	t, err := tracer.New(filepath.Join(dir, "trace.json"),
		tracer.WithMaxFileSize(4<<10), tracer.WithMaxFiles(3))
	if err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		t.Span("work", tracer.Int("i", i))()
		if i%100 == 99 {
			t.Flush()
		}
	}
	if err := t.Close(); err != nil {
		log.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "trace.*json"))
	fmt.Println(len(files), "files, the newest in trace.json")
	// Output: 3 files, the newest in trace.json
}

// A flight recorder keeps the most recent events in memory and writes them
// only when asked, for example when a request turns out slow.
func ExampleNewFlightRecorder() {
	rec, err := tracer.NewFlightRecorder(tracer.FlightRecorderConfig{MaxEvents: 3})
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Close()
	for _, step := range []string{"parse", "plan", "fetch", "render", "send"} {
		rec.Span(step)()
	}

	var trace bytes.Buffer
	if _, err := rec.WriteTo(&trace); err != nil {
		log.Fatal(err)
	}
	fmt.Println(names(trace.Bytes(), "X"))
	fmt.Println(rec.Stats().Overwritten, "overwritten")
	// Output:
	// [fetch render send]
	// 2 overwritten
}
