// Package tracetest lets a test or a benchmark write a trace of itself when
// asked, with one line in it.
//
// # Quick start
//
//	func TestMain(m *testing.M) { tracetest.Main(m) } // once per package
//
//	func TestDecode(t *testing.T) {
//		tracetest.Start(t)
//		...
//	}
//
//	func BenchmarkDecode(b *testing.B) {
//		tracetest.Start(b)
//		for range b.N {
//			decode(input)
//		}
//	}
//
// Then ask for a trace:
//
//	go test -run TestDecode -args -tracer.out=decode.json
//	go test -run '^$' -bench Decode -benchtime 2s -args -tracer.out=bench.json
//	TRACER_FILE=decode.json go test -run TestDecode
//
// Without the flag or TRACER_FILE, nothing is recorded and Start costs one
// atomic load. The path is relative to the package's directory, where go
// test runs its binary; with several packages, each writes its own file
// there.
//
// # What the trace shows
//
// Start records a span named after the test on the test's goroutine, which
// it names after the test too, so the test's own spans, and those of the
// code it calls, nest under it. A benchmark function runs once per batch
// of b.N iterations (1, then 100, then 10000, ... as the testing package
// sizes it), so a benchmark gets one span per batch, with N as an arg,
// rather than one per iteration, which would cost a span's time inside
// the measurement. For a span per iteration, put tracer.Span in the loop.
// With b.Loop the benchmark function runs once, so its span covers the
// whole loop. The span ends and is flushed in a Cleanup, which for a
// benchmark runs after the timer stopped.
//
// Main closes the file when the tests are done, so it is strict JSON.
// Without Main, every test's events are flushed when it ends, and the file
// is left unterminated when the test binary exits, as after a kill: both
// viewers open it as it is.
//
// # Asserting on spans
//
// Record keeps what a test records in memory, for the test to check, as
// zaptest/observer does for logs and OpenTelemetry's
// tracetest.SpanRecorder for spans:
//
//	func TestServe(t *testing.T) {
//		rec := tracetest.Record(t)
//		serve("ada")
//		spans := rec.Spans() // name, category, args, start, duration, goroutine, parent
//		require.Equal(t, "serve", rec.Named("decode")[0].Parent.Name)
//	}
//
// Record makes the default tracer write to memory while the tests that
// call it run, so it works for the package-level functions that code under
// test calls. Tests may call it in parallel; each sees its own goroutine's
// spans and those of the goroutines it starts (see Recorder.Spans for what
// parallel tests share). While a trace file is being written
// (-tracer.out, TRACER_FILE), Record reads a tee of its tracer, and the
// file gets the tests' spans as well.
package tracetest

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/gotracer/tracer"
)

var out = flag.String("tracer.out", "", "write a trace of the tests run to `file` (.gz gzips); see package tracetest")

var (
	catTest  = tracer.Category("test")
	startErr error // the error of the first attempt to start the tracer
	startMu  sync.Mutex
)

// Main starts the default tracer if -tracer.out names a file, runs the
// tests, stops the tracer (which closes its file, whether -tracer.out or
// TRACER_FILE started it) and exits. Call it from TestMain:
//
//	func TestMain(m *testing.M) { tracetest.Main(m) }
func Main(m *testing.M) {
	flag.Parse()
	if err := start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	if err := tracer.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "tracetest: %v\n", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// start starts the default tracer writing to -tracer.out, unless it runs
// already or no file was asked for. Only the first call tries.
func start() error {
	startMu.Lock()
	defer startMu.Unlock()
	if *out == "" || tracer.Default() != nil || startErr != nil {
		return startErr
	}
	if err := tracer.Start(*out); err != nil {
		startErr = fmt.Errorf("tracetest: -tracer.out=%s: %w", *out, err)
	}
	return startErr
}

// Start records a span named after tb on the calling goroutine until tb's
// cleanup, if a trace was asked for (-tracer.out or TRACER_FILE); it
// starts the default tracer on the first call when -tracer.out asks for
// one and Main did not start it. It fails tb if the file cannot be
// written. For a benchmark, the span is one batch of b.N iterations and
// carries N. Call Start at the top of the test or benchmark function, on
// its own goroutine.
func Start(tb testing.TB) {
	tb.Helper()
	if tracer.Default() == nil {
		if *out == "" {
			return
		}
		if err := start(); err != nil {
			tb.Fatal(err)
		}
	}
	tracer.SetGoroutineName(tb.Name())
	var end func(...tracer.Arg)
	if b, ok := tb.(*testing.B); ok {
		end = tracer.Span(tb.Name(), catTest, tracer.Int("N", b.N))
	} else {
		end = tracer.Span(tb.Name(), catTest)
	}
	tb.Cleanup(func() {
		end()
		if err := tracer.Flush(); err != nil {
			tb.Logf("tracetest: %v", err)
		}
	})
}
