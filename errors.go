package tracer

import "errors"

// The errors the tracer returns that a caller may test with errors.Is.

// ErrClosed is returned by Flush on a tracer that was closed.
var ErrClosed = errors.New("tracer: closed")

// ErrStarted is returned by Start when the default tracer is already running.
var ErrStarted = errors.New("tracer: already started")

// ErrTimeout is returned by Flush, Close and Stop when the sink did not
// take the trace within the stop timeout. The write goes on in the
// background.
var ErrTimeout = errors.New("tracer: timed out waiting for the trace to be written")

// ErrReentrant is returned by Flush, Close and Stop, and by a
// FlightRecorder's WriteTo and WriteFile, when they are called on one of
// the tracer's own goroutines: from its error handler, from the Write of
// its sink or io.Writer. They would wait for the very goroutine they run
// on, so they return at once instead; the tracer flushes on its own, and
// Close belongs to the code that made the tracer.
var ErrReentrant = errors.New("tracer: called from the tracer's own goroutine (its error handler, Sink or io.Writer), which would wait for itself")

// ErrFileInUse is returned, wrapped with the path, by New and Start when
// another tracer, in this process or another, is writing the file.
var ErrFileInUse = errors.New("file is being written by another tracer (in this process or another), and two writers would make it unreadable: give each its own path")
