package tracer

import (
	"fmt"
	"os"
	"runtime/debug"

	"go.uber.org/atomic"
)

// Code the tracer runs for the user.
//
// The tracer's own goroutines run user code: the writer goroutine calls
// the sink (an io.Writer given to NewWithWriter, a Sink) and the error
// handler, and the flusher goroutine calls the error handler with the
// misuses it refused. That code may record without knowing it (a handler
// that logs through slog with traceslog installed, a writer that wraps
// another and times its writes with a span) and may call Flush "to be
// safe". Neither may make the goroutine wait for itself: the writer is
// what frees room in the buffers and completes a Flush.
//
//   - Recording on those goroutines never waits for room. When the
//     buffers are full, such an event takes a chunk of a small reserve
//     beyond the buffer limit (ownReserveChunks); it is written after the
//     batch under way, like any event. Past the reserve, it is dropped
//     and counted in Stats.Dropped, even with WithLossless: waiting there
//     would stop every goroutine that records.
//   - Flush and Close called there return ErrReentrant at once, and so
//     does a FlightRecorder's WriteTo.
//
// Telling those goroutines apart costs a goroutine id lookup, only on
// paths that would wait: never on the record path's fast path.

// ownReserveChunks is how many chunks beyond the buffer limit the
// tracer's own goroutines may take when the buffers are full: 128 KiB,
// about two thousand events, which is far more than an error handler
// records per failed write.
const ownReserveChunks = 2

// ownGoroutines holds the ids of the goroutines that run user code for a
// tracer, 0 until each starts.
type ownGoroutines struct {
	writing, flushing atomic.Uint64 // the writer goroutine, the flusher goroutine
}

// flusherRuns notes that the calling goroutine is the flusher's.
func (r *recorder) flusherRuns() { r.own.flushing.Store(goroutineID()) }

// onOwnGoroutine reports whether the caller is one of t's own goroutines.
func (r *recorder) onOwnGoroutine() bool {
	g := goroutineID()
	return g == r.own.writing.Load() || g == r.own.flushing.Load()
}

// A panic in user code the tracer calls is recovered, wherever it runs:
// the program goes on, and the panic shows where the code's result would
// have: a String method's as the arg's text (callString, as fmt shows
// it), a Sink's or io.Writer's Write or Close as a failed write reported
// to the error handler (writerSink), and the error handler's on standard
// error, once, with its stack: the handler cannot be told of itself.

// recoverHandler returns the error handler h, made to recover its panics.
func recoverHandler(h func(error)) func(error) {
	var told atomic.Bool
	return func(err error) {
		defer func() {
			if p := recover(); p != nil && told.CompareAndSwap(false, true) {
				fmt.Fprintf(os.Stderr, "tracer: the error handler panicked: %v\n(it was given: %v; later panics of the handler are not shown)\n%s",
					p, err, debug.Stack())
			}
		}()
		h(err)
	}
}

// reentrant returns the error op returns on one of t's own goroutines.
func reentrant(op string) error {
	return fmt.Errorf("%w: %s returned without waiting", ErrReentrant, op)
}
