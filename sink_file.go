package tracer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// sinkOptions says how a path becomes a sink.
type sinkOptions struct {
	gzip     bool
	level    int
	maxSize  int64
	maxFiles int
	fifoWait time.Duration // how long to wait for a named pipe's reader: the stop timeout
}

// rotating reports whether the files rotate: WithMaxFileSize or
// WithMaxFiles.
func (o *sinkOptions) rotating() bool { return o.maxSize > 0 || o.maxFiles > 0 }

// openSink opens the sink for path: a file, gzipped when path ends in
// ".gz" or WithGzip was given, and rotated with WithMaxFileSize.
func openSink(path string, o *sinkOptions) (sink, error) {
	if strings.HasSuffix(path, ".gz") && !o.gzip {
		o.gzip, o.level = true, DefaultGzipLevel
	}
	if o.maxFiles > 0 && o.maxSize == 0 {
		return nil, errors.New("tracer: WithMaxFiles needs WithMaxFileSize")
	}
	if o.maxSize > 0 {
		r, err := newRotator(path, o)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	fs, ws, err := openFile(path, o.fifoWait)
	switch {
	case err != nil:
		return nil, err
	case ws != nil:
		out, _ := o.onStream(ws)
		return out, nil
	}
	out, _ := o.onFile(fs)
	return out, nil
}

// The sink chain has one builder for each kind of bottom: onFile for a
// regular file (New, and each file of a rotation), onStream for what
// cannot be cut back (an io.Writer, a named pipe, /dev/stdout). Each
// returns the top of the chain and its gzipSink, nil if not gzipped.

// onFile builds the chain over the regular file fs: gzip members, which
// Close joins into one, or events kept off page boundaries.
func (o *sinkOptions) onFile(fs *fileSink) (sink, *gzipSink) {
	if o.gzip {
		g := newGzipSink(fs, o.level)
		g.path = fs.path // Close joins its members
		return g, g
	}
	return &pageAligned{file: fs}, nil
}

// onStream builds the chain over the stream ws: gzip members, each only
// readable whole, or the stream itself.
func (o *sinkOptions) onStream(ws *writerSink) (sink, *gzipSink) {
	if o.gzip {
		ws.whole = true
		g := newGzipSink(ws, o.level)
		return g, g
	}
	return ws, nil
}

// A fileSink writes the trace to a regular file and keeps the file whole
// across failed writes: a write that fails part-way (a full disk, a file
// size limit) is cut back off the file, so the file ends on the last whole
// write, whatever happens later. Undoing a partial write matters more for
// a gzip file than for JSON: Perfetto refuses a whole trace whose last gzip
// member is cut short.
type fileSink struct {
	f    *os.File
	path string
	size int64 // bytes of whole writes in the file
}

// openFile creates or truncates the file at path and returns the sink for
// it: a fileSink for a regular file, locked for as long as it is open (see
// filelock.go), or else a writerSink for what cannot be cut back, such as
// /dev/stdout or a named pipe. Opening a named pipe
// waits for a reader at most fifoWait (zero: as long as it takes).
func openFile(path string, fifoWait time.Duration) (*fileSink, *writerSink, error) {
	if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeNamedPipe != 0 && fifoWait > 0 {
		f, err := openFIFO(path, fifoWait)
		if err != nil {
			return nil, nil, err
		}
		return nil, newWriterSink(f, f.Close), nil
	}
	for tries := 0; ; tries++ {
		// Not O_TRUNC: a file another tracer writes must be left as it is.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("tracer: %w", err)
		}
		if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
			return nil, newWriterSink(f, f.Close), nil
		}
		if err := lockFile(f); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("tracer: %s: %w", path, err)
		}
		if !stillAt(f, path) {
			// A rotation put another file at path between the open and
			// the lock, and the file opened is a rotated one, whose
			// tracer has let it go: it is not path's to truncate.
			f.Close()
			if tries < 100 {
				continue
			}
			return nil, nil, fmt.Errorf("tracer: %s: %w", path, ErrFileInUse)
		}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("tracer: %w", err)
		}
		removeStale(path)
		return &fileSink{f: f, path: path}, nil, nil
	}
}

// stillAt reports whether f is the file at path.
func stillAt(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	at, err := os.Stat(path)
	return err == nil && os.SameFile(fi, at)
}

func (s *fileSink) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	if err == nil {
		s.size += int64(n)
		return n, nil
	}
	if n > 0 {
		if terr := s.undo(); terr != nil {
			// The file is cut in the middle of an event. Count what is
			// there, so the next write does not truncate it again; the
			// error says what happened.
			s.size += int64(n)
			return n, errors.Join(err, terr)
		}
	}
	return 0, err
}

// undo cuts the file back to its last whole write.
func (s *fileSink) undo() error {
	if err := s.f.Truncate(s.size); err != nil {
		return fmt.Errorf("tracer: cutting back a partial write: %w", err)
	}
	if _, err := s.f.Seek(s.size, io.SeekStart); err != nil {
		return fmt.Errorf("tracer: cutting back a partial write: %w", err)
	}
	return nil
}

func (s *fileSink) Close() error { return s.f.Close() }

// A kill can cut a regular file only at a page boundary: see pagealign.go.
func (s *fileSink) traits() sinkTraits { return sinkTraits{pageCuts: true} }
