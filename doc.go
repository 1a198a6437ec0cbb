// Package tracer records where a Go program's time goes and writes it as a
// Chrome Trace Event Format file that Perfetto (ui.perfetto.dev) and
// chrome://tracing open directly.
//
// A program starts the default tracer once and marks the work it wants to
// see with spans:
//
//	func main() {
//		if err := tracer.Start("trace.json"); err != nil {
//			log.Fatal(err)
//		}
//		defer tracer.Stop() // also runs on panic: the file is written and closed
//
//		tracer.SetGoroutineName("main")
//		run()
//	}
//
//	func decode(b []byte) {
//		defer tracer.Span("decode", tracer.Int("bytes", len(b)))()
//		// ...
//	}
//
// Open trace.json at https://ui.perfetto.dev, or load it in chrome://tracing.
// The examples below show the lines of the file that each call writes.
//
// # A goroutine is a track
//
// The viewers draw a trace as tracks, one per thread, with time running
// left to right. In a Go program the thread that runs a piece of code is an
// accident of the scheduler, and the goroutine is what the code knows, so
// tracer writes the goroutine id as the thread id: every goroutine has a
// track of its own. A goroutine runs one thing at a time, so the spans it
// records nest on its track the way its calls nest. [SetGoroutineName] and
// [SetGoroutineSortIndex] give a track a name and a place; the process is
// named after the executable unless [WithProcessName] says otherwise.
//
// # Ending a span
//
// [Span] records the moment it is called and returns the function that
// ends the span. Defer the call of that function, so the span measures the
// rest of the function:
//
//	defer tracer.Span("decode")()
//
// Mind the final (): without it the span starts when the function returns
// and never ends. The tracervet analyzer finds that mistake (see its
// package, github.com/gotracer/tracer/tracervet).
//
// Args known only at the end, a status or a size, go to the end function,
// and join the span's:
//
//	end := tracer.Span("request", tracer.String("route", route))
//	// ...
//	end(tracer.Int("status", code))
//
// The end rule: call the function Span returns once, on the goroutine that
// started the span, and end the spans of a goroutine in the reverse order
// they began (deferred calls do both). A goroutine's spans are a stack,
// which is what lets the viewers draw them nested. An end that breaks the
// rule ends nothing else: it is counted in [Stats].Unmatched and reported
// once to the error handler; [Span] says what becomes of the spans
// involved. A span never ended is written with its start only,
// which the viewers draw up to the end of the trace, and [Tracer.Close]
// reports it.
//
// A span that ends within a flush interval is one complete ("X") event in
// the file. [LongSpan] is for work you want to see while it runs, or after
// a crash: a migration, a phase of a batch job. Its start is in the file
// from the next flush.
//
// # Work across goroutines
//
// A span belongs to one goroutine. Work that does not has two forms.
//
// An [Async] is an operation with a track of its own: it begins on one
// goroutine and may get instants, nested children and its end from any
// other. Use it for what has a duration of its own that no one goroutine
// spends: a request waiting in a queue, a download served by several
// goroutines in turn.
//
//	op := tracer.AsyncBegin("download", tracer.String("url", url))
//	go func() {
//		// ...
//		op.End(tracer.Int("bytes", n))
//	}()
//
// A [Flow] is an arrow between spans: from the span that queued a job to
// the span that ran it, and on to the one that used its result. Use it when
// the work is already spans on the goroutines that did it, and what is
// missing is which caused which.
//
//	job.flow = tracer.FlowBegin("job") // inside the producer's span
//	// ...
//	job.flow.End()                     // inside the worker's span
//
// Both are small values: pass them along with the work, or in a context
// with [ContextWithAsync] and [ContextWithFlow].
//
// A [SpanHandle], from [StartSpan], is a span whose end may come from any
// goroutine, for code that cannot know in advance where its span ends,
// such as a library's instrumentation (OpenTelemetry's, through the
// traceotel module). Ended on its own goroutine, nested with the spans
// there, it is drawn as a Span; otherwise as an async slice.
//
//	h := tracer.StartSpan("request")
//	// ... h.End() here or on any other goroutine
//
// # Other events
//
// [Instant] marks a moment on the calling goroutine's track (a cache miss,
// a retry); [InstantProcess] and [InstantGlobal] mark one that concerns the
// whole process or trace. [Counter] records numbers the viewers draw as a
// graph: a queue's depth, bytes in flight.
//
// Args ([String], [Int], [Float64], [Bool], [Err], [Duration], [Time],
// [Stringer], ...) are key/value pairs the viewers show when an event is
// selected. They are plain values: building one allocates nothing, and
// [Duration], [Time] and [Stringer] are formatted by the flusher, only for
// events that are recorded.
//
// # Categories
//
// A [Category] arg puts an event in a category, its "cat" field, which the
// viewers group and filter by. Categories also let parts of the tracing be
// switched off and on: [WithCategories] records only the listed ones (and
// events with no category), as does the TRACER_CATEGORIES environment
// variable, and [SetCategories] changes the choice while the program runs.
// An event of a disabled category costs about one atomic
// load more than tracing off. [CategoryEnabled] tells whether a category
// is recorded, to skip work that only its events would need.
//
// # Libraries
//
// A library records with the package-level functions and never starts a
// tracer: the application decides. While no default tracer runs, every
// package-level call returns at once, at the cost of one atomic load and
// no allocation, so tracing calls can stay in library and production code.
// What would cost something even then, a name built with fmt.Sprintf or an
// arg computed for the trace, goes behind [Enabled]:
//
//	if tracer.Enabled() {
//		tracer.Instant(fmt.Sprintf("cache miss for %s", key))
//	}
//
// The tracehttp, traceslog and traceruntime packages of this module trace
// HTTP servers and clients, log records and runtime metrics this way.
//
// # Turning tracing on and off
//
// [Start] starts the default tracer, which the package-level functions
// record into, and [Stop] writes everything and closes its file. Setting
// the environment variable TRACER_FILE starts it before main runs, without
// a line of code (see [EnvFile]). [StopOnSignal] closes the file when the
// process is interrupted, and [StopOnPanic] when a goroutine other than
// main panics. [SetDefault] makes any [Tracer] the default, for example a
// [FlightRecorder], which keeps the last events in memory and writes them
// only when asked. Goroutine names and categories set with the
// package-level functions are remembered across a Stop and Start.
//
// # Tests
//
// The tracetest package writes a trace of a package's tests and benchmarks
// when the test binary is run with -tracer.out, for one line of code in
// each test: tracetest.Start(t). The default
// tracer is global, so tests that need a trace each, in parallel, create
// their own with [New] (or [NewWithWriter], to a buffer) and hand it to
// the code under test; every package-level function is also a method of
// [Tracer], and a nil *Tracer records nothing, so code can hold one
// unconditionally.
//
// # Cost
//
// Recording is lock-free and allocation-free: an event is a few 32-byte
// slots written into a buffer owned by the current P (the runtime's
// processor), and a background goroutine, the flusher, encodes the buffers
// as JSON for a writer goroutine. A span costs little more than the two
// clock reads it needs, and those are cheap: where the OS keeps time with
// the CPU's counter (Linux on amd64 and arm64, as a rule), events are
// stamped with the counter and converted to the runtime's monotonic clock
// when they are encoded. A program that records faster than the flusher
// keeps up with helps it: the recording goroutine encodes, and waits for
// the disk when the buffers are full, so no event is lost while the disk
// keeps up. Only when the sink stalls are events dropped and counted (never,
// with [WithLossless]); [Tracer.Stats] reports the count and the trace
// shows it as the "tracer.dropped" counter, whose track appears only once
// something was dropped.
//
// # The file survives a crash
//
// The file starts with "[" and holds one event per line, each followed by a
// comma, and every write ends on an event boundary. Both viewers accept the
// array without its closing "]", so a process killed with SIGKILL leaves a
// file they open, holding everything up to the last flush (at most the flush
// interval old, 100ms by default). [Tracer.Close], or [Stop], ends the array
// so the file is also strict JSON. A path ending in ".gz" writes a gzip
// file, and [WithMaxFileSize] rotates it; both keep this property.
//
// A plain file starts with spaces before its "[", and Close turns them into
// the head of the JSON object form, {"displayTimeUnit":"ns","traceEvents":
// [...]}: in its default unit chrome://tracing draws spans shorter than a
// microsecond, back to back, as a staircase of nested slices, and only the
// object form can change the unit. A rotated file is closed this way when
// the next one starts. Gzip and streamed traces, and files cut short, stay
// arrays.
package tracer
