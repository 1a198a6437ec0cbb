package tracer

import (
	"io"
	"runtime"

	"go.uber.org/atomic"
)

// The sink chain.
//
// The writer goroutine hands each batch of encoded events to one sink,
// which may pass it on to others: a path becomes a chain such as
// rotator → gzipSink → fileSink, a Writer a gzipSink → writerSink, and a
// flight recorder a window. Every link is a sink, and neither the flusher
// nor a link knows the concrete type of the sink it writes to: what it
// must do differently for one (keep gzip members off page boundaries,
// write to a pipe in atomic pieces, start a new file, write nothing until
// a dump) it learns from the sink's traits.

// A sink receives the encoded trace. Every Write holds whole events and
// ends on an event boundary. Sink is its public form, which a writerSink
// wraps.
type sink interface {
	io.Writer
	Close() error

	// traits says what a writer of the sink must know of it. It does not
	// change over the sink's life.
	traits() sinkTraits
}

// sinkTraits is what a sink tells whoever writes to it.
type sinkTraits struct {
	// pageCuts: the sink is a regular file, which a kill can cut only at
	// a page boundary (see pagealign.go), so a gzip member kept within a
	// page is never cut.
	pageCuts bool

	// pipe: the sink is a pipe, on which a write of at most pipeBuf
	// bytes is atomic (see writerSink).
	pipe bool

	// files, if not nil, cuts the trace into files that each open alone:
	// the flusher writes each file's end and the next one's head (see
	// maybeRotate).
	files fileCutter

	// window: the sink keeps only the newest events, in memory, and a
	// trace is built from them when asked (see FlightRecorder). The
	// flusher writes no head, never splits a span into B and E events,
	// and leaves the naming of tracks to the dump.
	window bool

	// overwritten, if not nil, counts the events the sink pushed out to
	// make room for newer ones (Stats.Overwritten).
	overwritten *atomic.Uint64

	// openAtClose, with window, counts in Stats.Overwritten the n spans still
	// open when the tracer closed, which only a trace taken earlier
	// could have held.
	openAtClose func(n uint64)
}

// A fileCutter is a sink that cuts the trace into files: a rotator.
type fileCutter interface {
	// ratio returns the bytes the current file holds per byte written to
	// it: 1 for plain JSON, less for gzip. The encoder uses it to start a
	// new file near the size limit. It is called on the writer goroutine,
	// after a write.
	ratio() float64

	// cut ends the current file with end, writes nothing more to it, and
	// starts a new one, which the next Write goes to, with opening
	// written in it before it is put in place. If it fails (err),
	// the current file goes on. endErr is the failed write of end: the
	// new file is started all the same, and the old one stays
	// unterminated, as a kill leaves it. errs are errors of earlier cuts
	// that finished in the background, to report whatever happens to this
	// one. events is how many events the writer delivered to the current
	// file, and endEvents how many end holds, for deleted.
	cut(end, opening []byte, events, endEvents int) (endErr error, errs []error, err error)

	// deleted returns how many of the events written are in files
	// WithMaxFiles removed since (Stats.Deleted).
	deleted() uint64
}

// pipeBuf is PIPE_BUF: a write of at most this many bytes to a pipe is
// atomic. It is 4096 on Linux, and POSIX promises 512.
var pipeBuf = map[bool]int{true: 4096, false: 512}[runtime.GOOS == "linux"]

// A Sink receives the encoded trace from a Tracer's background goroutine.
// It is an io.WriteCloser; the name is for the contract below, which
// NewWithSink relies on.
//
// The first Write starts with "[" and the process metadata; every Write
// holds whole events, one a line, and ends on an event boundary, so that
// whatever a Sink passed on before a crash is a trace both viewers load.
// Writes come from one goroutine at a time. Close is called once, by the
// Tracer's Close, after the last Write, which ends the JSON array.
//
// A Write that fails is reported to the error handler and counted in
// Stats; the Tracer goes on recording and writes the next batch. A Write
// that fails part-way leaves the stream cut inside an event: the Tracer
// writes the rest of that event first at its next Write, so a stream that
// recovers stays valid.
type Sink = io.WriteCloser
