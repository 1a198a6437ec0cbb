package tracer_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/gotracer/tracer"
)

// A Tracer of its own records apart from the default one, into its own
// file: a test that runs in parallel with others, or a component whose
// trace is wanted on its own. Every package-level recording function is
// also a method, and a nil *Tracer records nothing, so code can take a
// *Tracer and be given nil.
func ExampleNew() {
	defer inTempDir()()

	decode := func(tr *tracer.Tracer, data []byte) {
		defer tr.Span("decode", tracer.Int("bytes", len(data)))()
		// ...
	}

	tr, err := tracer.New("decode-test.json")
	if err != nil {
		log.Fatal(err)
	}
	decode(tr, []byte("{}"))
	decode(nil, []byte("{}")) // records nothing
	if err := tr.Close(); err != nil {
		log.Fatal(err)
	}

	printTrace("decode-test.json")
	// Output:
	// {"name":"decode","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1,"args":{"bytes":2}},
}

// A trace can go to any io.Writer: standard output, a connection, a buffer.
// The Tracer never closes it.
func ExampleNewWithWriter() {
	var buf bytes.Buffer
	tr, err := tracer.NewWithWriter(&buf)
	if err != nil {
		log.Fatal(err)
	}
	tr.Span("fetch")()
	tr.Span("decode")()
	if err := tr.Close(); err != nil {
		log.Fatal(err)
	}
	printEvents(buf.Bytes())
	// Output:
	// {"name":"fetch","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
	// {"name":"decode","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
}

// upload is a Sink that keeps the trace in memory and hands it on when the
// Tracer closes it, as one that uploads traces would.
type upload struct {
	bytes.Buffer
}

func (u *upload) Close() error {
	fmt.Println("upload", u.Len() > 0)
	printEvents(u.Bytes())
	return nil
}

// A Sink is an io.WriteCloser that the Tracer closes: every Write holds
// whole events and ends on an event boundary, and Close comes after the
// last one, which ends the JSON array.
func ExampleNewWithSink() {
	tr, err := tracer.NewWithSink(&upload{})
	if err != nil {
		log.Fatal(err)
	}
	tr.Instant("ready")
	if err := tr.Close(); err != nil { // calls upload.Close
		log.Fatal(err)
	}
	// Output:
	// upload true
	// {"name":"ready","ph":"i","ts":T,"s":"t","pid":P,"tid":G1},
}

// A path ending in ".gz" writes a gzip file. A closed one is a single gzip
// member, which every reader, chrome://tracing included, reads.
func ExampleNew_gzip() {
	defer inTempDir()()

	tr, err := tracer.New("trace.json.gz")
	if err != nil {
		log.Fatal(err)
	}
	tr.Span("compressed")()
	if err := tr.Close(); err != nil {
		log.Fatal(err)
	}

	f, err := os.Open("trace.json.gz")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		log.Fatal(err)
	}
	trace, err := io.ReadAll(zr)
	if err != nil {
		log.Fatal(err)
	}
	printEvents(trace)
	// Output:
	// {"name":"compressed","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
}

// WithMaxFileSize and WithMaxFiles keep a long trace in a bounded number of
// files, each of which opens alone in the viewers. The newest events are
// always in the file at the path given.
func ExampleWithMaxFileSize() {
	defer inTempDir()()

	tr, err := tracer.New("trace.json",
		tracer.WithMaxFileSize(4<<10), tracer.WithMaxFiles(3))
	if err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		tr.Span("work", tracer.Int("i", i))()
		if i%100 == 99 {
			tr.Flush()
		}
	}
	if err := tr.Close(); err != nil {
		log.Fatal(err)
	}
	files, _ := filepath.Glob("trace.*json")
	fmt.Println(len(files), "files, the newest events in trace.json")
	// Output: 3 files, the newest events in trace.json
}

// A flight recorder keeps the most recent events in memory and writes them
// only when asked, for example when a request turns out slow. Made the
// default tracer, it records the package-level calls.
func ExampleNewFlightRecorder() {
	rec, err := tracer.NewFlightRecorder(tracer.FlightRecorderConfig{MaxEvents: 3})
	if err != nil {
		log.Fatal(err)
	}
	if err := tracer.SetDefault(rec.Tracer()); err != nil {
		log.Fatal(err)
	}
	defer tracer.Stop()

	for _, step := range []string{"parse", "plan", "fetch", "render", "send"} {
		tracer.Span(step)()
	}

	var trace bytes.Buffer
	if _, err := rec.WriteTo(&trace); err != nil { // or rec.WriteFile("slow.json")
		log.Fatal(err)
	}
	printEvents(trace.Bytes())
	fmt.Println(rec.Stats().Overwritten, "overwritten")
	// Output:
	// {"name":"fetch","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
	// {"name":"render","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
	// {"name":"send","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
	// 2 overwritten
}

// A tee gives a second io.Writer a trace of its own of what a running
// tracer records until its Stop, as a server's capture on demand does,
// while the tracer's file gets everything. The span open when the tee
// starts, whose B event the file has (a LongSpan writes it at once), is
// in the tee's head; what ended before the tee is not in it; the span
// still open at Stop ends the tee's trace as a B event.
func ExampleTracer_Tee() {
	defer inTempDir()()

	tr, err := tracer.New("trace.json")
	if err != nil {
		log.Fatal(err)
	}
	endServe := tr.LongSpan("serve")
	tr.Span("before the capture")()

	var capture bytes.Buffer
	tee, err := tr.Tee(&capture)
	if err != nil {
		log.Fatal(err)
	}
	tr.Span("request", tracer.Int("n", 1))()
	endPending := tr.Span("pending")
	if err := tee.Stop(); err != nil {
		log.Fatal(err)
	}
	endPending()
	endServe()
	if err := tr.Close(); err != nil {
		log.Fatal(err)
	}
	// The capture is its window: "serve", begun before it, begins at its
	// start, and "pending", open at its end, ends there.
	printEvents(capture.Bytes())
	// Output:
	// {"name":"serve","ph":"B","ts":T,"pid":P,"tid":G1},
	// {"name":"request","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1,"args":{"n":1}},
	// {"name":"pending","ph":"B","ts":T,"pid":P,"tid":G1},
	// {"name":"pending","ph":"E","ts":T,"pid":P,"tid":G1},
	// {"name":"serve","ph":"E","ts":T,"pid":P,"tid":G1},
}
