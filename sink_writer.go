package tracer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

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
		n, err := s.call(s.rest)
		s.rest = s.rest[:copy(s.rest, s.rest[n:])]
		if err != nil {
			return 0, err
		}
	}
	n, err := s.call(p)
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

// call calls the writer's Write, user code: a panic in it is a write that
// failed, with nothing written.
func (s *writerSink) call(p []byte) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("tracer: the sink's Write panicked: %v", r)
		}
	}()
	n, err = s.w.Write(p)
	return min(max(n, 0), len(p)), err // a Writer that misreports n must not make the tracer panic
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
		err = errors.Join(err, s.callClose())
	}
	return err
}

// callClose calls the Sink's Close, user code: a panic in it is an error.
func (s *writerSink) callClose() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tracer: the sink's Close panicked: %v", r)
		}
	}()
	return s.close()
}
