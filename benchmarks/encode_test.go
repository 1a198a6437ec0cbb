package benchmarks

// BenchmarkEncode measures the work the span scenarios leave for later:
// turning recorded events into JSON and writing them to a file, per event.
// The tracer does it in its flusher, on another core when one is idle (so
// the single-threaded span scenarios leave it off the clock and the
// parallel ones include it); the mutex baseline does it once, at exit, in
// WriteTrace, never in its span scenarios. runtime/trace and chrometracing
// encode on the recording goroutine, inside their span numbers, and the
// OpenTelemetry exporter here discards, so they have no row. Every row
// encodes bare spans (the Span scenario's events) to a real file.

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/benchmarks/internal/mutextrace"
)

func BenchmarkEncode(b *testing.B) {
	b.Run("peer=tracer/mode=on", func(b *testing.B) {
		b.ReportAllocs()
		b.StopTimer()
		path := filepath.Join(tempDir, "encode-tracer.json")
		t, err := tracer.New(path)
		if err != nil {
			b.Fatal(err)
		}
		before := t.Stats()
		for done := 0; done < b.N; {
			n := min(tracerChunk, b.N-done)
			for i := 0; i < n; i++ {
				t.Span("span")()
			}
			b.StartTimer()
			if err := t.Flush(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			done += n
		}
		after := t.Stats()
		if err := t.Close(); err != nil {
			b.Error(err)
		}
		reportDropped(b, after.Dropped-before.Dropped)
		removeQuietly(path)
	})
	b.Run("peer=mutex/mode=on", func(b *testing.B) { mutexWrites(b, "encode-mutex.json", b.N) })
	// The mutex baseline written as often as the tracer's row flushes.
	// Writes of a Flush's size cost the kernel more per byte than
	// WriteTrace's 256 KiB ones at exit, so this row tells that part of the
	// difference from the rest. (Each group is a JSON document of its own:
	// the file is not one trace.)
	b.Run("peer=mutex/mode=chunked", func(b *testing.B) { mutexWrites(b, "encode-mutex-chunked.json", tracerChunk) })
}

// mutexWrites times the mutex baseline's WriteTrace of bare spans to file
// name, and the write(2) of its output, every per events (all at once,
// at exit, for per b.N); the records of each group are made off the
// clock.
func mutexWrites(b *testing.B, name string, per int) {
	b.ReportAllocs()
	b.StopTimer()
	path := filepath.Join(tempDir, name)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer removeQuietly(path)
	defer f.Close()
	defer mutextrace.Reset()
	w := bufio.NewWriterSize(f, 256<<10)
	for done := 0; done < b.N; {
		n := min(per, b.N-done)
		mutextrace.Reset()
		for i := 0; i < n; i++ {
			mutexSpan(done + i)
		}
		b.StartTimer()
		if err := mutextrace.WriteTrace(w); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		done += n
	}
}
