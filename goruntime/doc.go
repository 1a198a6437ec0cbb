// Package goruntime puts the Go runtime's own view of a program on the
// same timeline as its spans: each goroutine's scheduling states (running,
// runnable, blocked and why, in a system call), GC cycles and
// stop-the-world pauses, heap and goroutine counters, and the program's
// runtime/trace regions, tasks and logs.
//
// # Quick start
//
//	t, err := tracer.New("trace.json")
//	if err != nil {
//		log.Fatal(err)
//	}
//	stop, err := goruntime.Start(t)
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer t.Close()
//	defer stop() // before Close: converts the rest and flushes
//
// Open trace.json at https://ui.perfetto.dev. Next to each goroutine's
// span track ("worker 3") is its runtime track ("worker 3 (runtime)"):
// the state it was in under every span. A span that took long sits over
// a long "blocked" state (its "reason" arg says on what: "chan receive",
// "sync", "select", "sleep", "network"), a "runnable" one (it was ready
// but waited for a CPU), or a "GC assist". The "Go GC" and
// "Go stop-the-world" tracks sit at the top of the process, and the
// "go.heap" and "go.goroutines" counters under it.
//
// # How
//
// Start runs the runtime's execution tracer (runtime/trace) into a pipe
// and parses it as it comes with golang.org/x/exp/trace. The execution
// tracer's clock is runtime.nanotime, the tracer's own, so a state's ts
// is (nanotime - the tracer's ts 0)/1000 µs like a span's, to the 64ns
// tick of the execution trace. The converted events go into the file with
// the tracer's normal flushes, so a process killed with SIGKILL leaves
// both the spans and the runtime's view up to the last flush; the runtime
// hands its data over a generation (about a second) at a time, so its
// view trails the spans by that much. This package is its own module, so
// that the tracer's does not depend on golang.org/x/exp.
//
// # Tracks
//
// A goroutine's runtime track has tid = its goroutine id + 2^31 and the
// goroutine's name with " (runtime)"; both of its tracks get the
// goroutine's sort index (the one set with SetGoroutineSortIndex, or the
// goroutine id), so the pair sort together in chrome://tracing (by sort
// index, then name) and carry the same hint in Perfetto. States are X
// events that never overlap, and regions enclose the states inside them,
// so a runtime track never needs an overflow track.
//
// # What is kept
//
// By default, the states of goroutines that recorded a span or were named
// (the tracks a reader looks at), and only states of at least
// DefaultMinState: see WithAllGoroutines and WithMinState, and
// docs/goruntime.md for the measurements behind the defaults.
//
// # Offline
//
// Convert turns an execution trace taken elsewhere (go test -trace,
// /debug/pprof/trace, trace.FlightRecorder) into a trace file;
// the tracer-import-go command does it from the command line.
package goruntime
