package tracer

import (
	"bytes"
	"errors"
	"io"
	"os"
)

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

// NewWithWriter creates a Tracer writing the trace to w: standard output, a
// network connection, a buffer. With WithGzip the trace is compressed. The
// Tracer never closes w. Like New, it writes the head of the trace at once
// and returns an error if that write fails.
func NewWithWriter(w io.Writer, opts ...Option) (*Tracer, error) {
	return newStream(newWriterSink(w, nil), opts)
}

// NewWithSink creates a Tracer writing the trace to s, and closing s when
// the Tracer is closed. See Sink for what s receives.
func NewWithSink(s Sink, opts ...Option) (*Tracer, error) {
	return newStream(newWriterSink(s, s.Close), opts)
}

// newStream creates a Tracer writing to a stream that cannot be cut back
// or rotated.
func newStream(s *writerSink, opts []Option) (*Tracer, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.sink.rotating() {
		return nil, errRotateStream
	}
	var out sink = s
	if o.sink.gzip {
		s.whole = true // a gzip member is only readable whole
		out = newGzipSink(s, o.sink.level)
	}
	t, err := newTracer(out, o)
	if err != nil {
		out.Close()
		return nil, err
	}
	return t, nil
}

// A writerSink passes batches to an io.Writer that cannot be cut back. When
// a Write fails part-way, it keeps the rest of the cut event (of the cut
// gzip members, when whole is set) and writes it first at the next Write,
// so a writer that recovers carries a valid trace, and it returns the
// bytes that reach the writer, now or then. The other events of the
// failed batch are lost, and counted.
//
// On a pipe, a write of at most pipeBuf bytes is atomic: a process killed
// while it waits for the reader has written all of it or nothing, where a
// longer write may stop anywhere. So to a pipe the events are written in
// pieces of at most pipeBuf bytes, each ending on an event boundary (on a
// gzip member boundary, see gzipSink), and a kill leaves the stream on one.
type writerSink struct {
	w     io.Writer
	close func() error // nil: the writer is not ours to close
	whole bool         // a Write is one unit (gzip members), not lines
	pipe  bool         // w is a pipe: write lines in atomic pieces
	rest  []byte       // the unwritten end of a cut unit
}

func newWriterSink(w io.Writer, close func() error) *writerSink {
	return &writerSink{w: w, close: close, pipe: isPipe(w)}
}

// isPipe reports whether w is a pipe or FIFO.
func isPipe(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

func (s *writerSink) Write(p []byte) (int, error) {
	if !s.pipe || s.whole || len(p) <= pipeBuf {
		return s.write(p)
	}
	done := 0
	for done < len(p) {
		n, err := s.write(lineChunk(p[done:], pipeBuf))
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

func (s *writerSink) write(p []byte) (int, error) {
	if len(s.rest) > 0 {
		n, err := s.w.Write(s.rest)
		s.rest = s.rest[:copy(s.rest, s.rest[n:])]
		if err != nil {
			return 0, err
		}
	}
	n, err := s.w.Write(p)
	if err != nil && n > 0 && n < len(p) {
		end := len(p)
		if !s.whole {
			end = n + bytes.IndexByte(p[n:], '\n') + 1
			if bytes.Equal(p[end:], []byte("]\n")) {
				end = len(p) // the end of the array goes with the last event
			}
		}
		s.rest = append(s.rest[:0], p[n:end]...)
		// The cut event reaches the writer with the next Write: report
		// it as written, so that it is neither counted lost nor written
		// again.
		return end, err
	}
	return n, err
}

func (s *writerSink) traits() sinkTraits { return sinkTraits{pipe: s.pipe} }

// Close finishes a unit that the last Write cut, if the writer takes it
// now, so the trace does not end in the middle of an event, and then
// closes the writer if it is ours.
func (s *writerSink) Close() error {
	var err error
	if len(s.rest) > 0 {
		_, err = s.Write(nil)
	}
	if s.close != nil {
		err = errors.Join(err, s.close())
	}
	return err
}
