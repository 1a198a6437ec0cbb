package tracer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.uber.org/atomic"
)

// DefaultFlightRecorderBytes bounds the memory a flight recorder's window
// takes unless FlightRecorderConfig.MaxBytes says otherwise.
const DefaultFlightRecorderBytes = 64 << 20

// FlightRecorderConfig says which events a FlightRecorder keeps: the most
// recent ones, within every limit that is set. At least one of MaxEvents
// and MaxAge must be.
type FlightRecorderConfig struct {
	// MaxEvents is how many events the window holds at most.
	MaxEvents int
	// MaxAge drops the events that ended longer ago. The window holds events
	// in batches of one flush, so it keeps up to one flush interval more
	// (WithFlushInterval, 100ms by default).
	MaxAge time.Duration
	// MaxBytes bounds the memory the window's events take, encoded, which is
	// about 100 bytes an event. Zero means DefaultFlightRecorderBytes.
	// While WriteTo or WriteFile takes a trace, the trace is built in
	// memory first, about as much again (and its compressed copy for
	// gzip), so that no writer runs under the recorder's lock.
	MaxBytes int
}

// A FlightRecorder is a Tracer that writes nothing until asked: it keeps
// the most recent events in memory, newer ones pushing out older ones, and
// WriteTo or WriteFile writes them as a complete trace. Take one when
// something worth looking at happens, a slow request or a panic about to
// unwind, to see what led to it.
//
// Stats.Events and Stats.Bytes count what went into the window; the events
// pushed out of it are counted in Stats.Overwritten, apart from
// Stats.Dropped. In a flight recording every span is a complete X
// event once it ends, LongSpan's included, so that no E event can lose its B
// to the window's edge; spans still open when the trace is taken are B
// events without an E, which both viewers draw up to the end of the trace.
// Likewise a trace leaves out the ends of async operations and flows whose
// beginning left the window, and ends the operations still open when it
// is taken.
//
// A FlightRecorder records as any Tracer, with the same methods, and
// Tracer returns it as one, for SetDefault or code that takes a *Tracer;
// Close discards the window.
type FlightRecorder struct {
	*tracerCore
	win *windowSink // the tracer's sink
}

// tracerCore is Tracer under a name that is not exported, so that the
// embedded field of a FlightRecorder cannot be set from outside while its
// methods are still promoted.
type tracerCore = Tracer

// Tracer returns the recorder as a *Tracer: the same tracer, recording
// into the window.
func (r *FlightRecorder) Tracer() *Tracer { return r.tracerCore }

// NewFlightRecorder creates a FlightRecorder. The options are New's, less
// rotation; with WithGzip, WriteTo compresses what it writes.
func NewFlightRecorder(cfg FlightRecorderConfig, opts ...Option) (*FlightRecorder, error) {
	switch {
	case cfg.MaxEvents < 0 || cfg.MaxAge < 0 || cfg.MaxBytes < 0:
		return nil, fmt.Errorf("tracer: negative flight recorder limit in %+v", cfg)
	case cfg.MaxEvents == 0 && cfg.MaxAge == 0:
		return nil, errors.New("tracer: a flight recorder needs MaxEvents or MaxAge")
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultFlightRecorderBytes
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	if o.sink.rotating() {
		return nil, errors.New("tracer: a flight recorder writes no files to rotate")
	}
	win := &windowSink{cfg: cfg, now: o.clock.now}
	t, err := newTracer(win, o)
	if err != nil {
		return nil, err
	}
	return &FlightRecorder{tracerCore: t, win: win}, nil
}

// WriteTo writes a trace of the events in the window to w, and returns the
// bytes written. The trace is complete and closed, in the JSON object form
// a closed plain file has, {"displayTimeUnit":"ns","traceEvents":[...]}:
// it starts with the process metadata, names the goroutines it holds, and
// ends with the drop counter. It holds the events recorded before the
// call; taking it does not empty the window.
func (r *FlightRecorder) WriteTo(w io.Writer) (int64, error) {
	b, err := r.snapshot()
	if err != nil {
		return 0, err
	}
	if r.opts.sink.gzip {
		if b, err = newGzipSink(nil, r.opts.sink.level).compress(b); err != nil {
			return 0, err
		}
	}
	n, err := w.Write(b)
	return int64(n), err
}

// WriteFile writes the trace WriteTo writes to the file at path, creating
// or replacing it, gzipped if path ends in ".gz". It refuses, with an
// error wrapping ErrFileInUse, a file a tracer is writing (in this process
// or another), and replaces a file only once the whole trace is written
// beside it: on a full disk the file keeps what it held.
func (r *FlightRecorder) WriteFile(path string) error {
	b, err := r.snapshot()
	if err != nil {
		return err
	}
	if r.opts.sink.gzip || strings.HasSuffix(path, ".gz") {
		level := r.opts.sink.level
		if !r.opts.sink.gzip {
			level = DefaultGzipLevel
		}
		if b, err = newGzipSink(nil, level).compress(b); err != nil {
			return err
		}
	}
	if err := replaceFile(path, b); err != nil {
		return fmt.Errorf("tracer: writing a flight recording: %w", err)
	}
	return nil
}

// snapshot drains the buffers into the window and returns the trace of the
// window. It builds the trace in memory, rather than writing it under the
// flush lock, so that a slow writer does not hold up the flusher.
func (r *FlightRecorder) snapshot() ([]byte, error) {
	t := r.tracerCore
	if t.onOwnGoroutine() {
		return nil, reentrant("a FlightRecorder's dump")
	}
	t.flusher.mu.Lock()
	defer t.flusher.mu.Unlock()
	f := &t.flusher
	if f.isClosed() {
		return nil, ErrClosed
	}
	f.pass(true)
	f.sync() // into the window, which does not fail; the writer is idle now
	win := r.win
	win.evict(win.now())

	// The window's batches stay as they are while the trace is built: the
	// flusher, held here, is the only one that writes to the window.
	window := make([][]byte, len(win.chunks))
	for i, c := range win.chunks {
		window[i] = c.buf[c.off:]
	}
	return f.snapshot(window), nil
}

// A windowSink is a flight recorder's sink: the most recent batches the
// flusher wrote, less the oldest events beyond the limits. Every event is
// one line, so events are counted and cut off by lines.
type windowSink struct {
	cfg           FlightRecorderConfig
	now           func() int64  // the clock's: see flushclock.go
	chunks        []windowChunk // oldest first
	events, bytes int           // in the window
	spare         [][]byte
	overwritten   atomic.Uint64
}

// A windowChunk is one batch. Its events up to off have been pushed out.
type windowChunk struct {
	buf    []byte
	off    int
	events int
	at     int64 // nanotime when written: every event in it is older
}

func (w *windowSink) traits() sinkTraits {
	return sinkTraits{window: true, overwritten: &w.overwritten, openAtClose: w.openAtClose}
}

// openAtClose counts n spans still open at Close with the events pushed out: no
// trace can be taken of them any more.
func (w *windowSink) openAtClose(n uint64) { w.overwritten.Add(n) }

func (w *windowSink) Write(p []byte) (int, error) {
	var buf []byte
	if n := len(w.spare); n > 0 && cap(w.spare[n-1]) >= len(p) {
		buf, w.spare = w.spare[n-1][:0], w.spare[:n-1]
	}
	c := windowChunk{buf: append(buf, p...), events: bytes.Count(p, []byte{'\n'}), at: w.now()}
	w.chunks = append(w.chunks, c)
	w.events += c.events
	w.bytes += len(p)
	w.evict(c.at)
	return len(p), nil
}

// evict pushes out the oldest events beyond the limits.
func (w *windowSink) evict(now int64) {
	maxEvents := w.cfg.MaxEvents
	if maxEvents == 0 {
		maxEvents = int(^uint(0) >> 1)
	}
	for len(w.chunks) > 0 {
		c := &w.chunks[0]
		size := len(c.buf) - c.off
		if (w.cfg.MaxAge > 0 && c.at < now-int64(w.cfg.MaxAge)) ||
			w.events-c.events >= maxEvents || w.bytes-size >= w.cfg.MaxBytes {
			w.events -= c.events
			w.bytes -= size
			w.overwritten.Add(uint64(c.events))
			if len(w.spare) < 4 {
				w.spare = append(w.spare, c.buf)
			}
			w.chunks[0] = windowChunk{}
			w.chunks = w.chunks[1:]
			continue
		}
		for w.events > maxEvents || w.bytes > w.cfg.MaxBytes {
			n := bytes.IndexByte(c.buf[c.off:], '\n') + 1
			c.off += n
			c.events--
			w.events--
			w.bytes -= n
			w.overwritten.Inc()
		}
		return
	}
}

// Close lets the window's memory go, and counts its events as pushed
// out: no trace can be taken of them any more.
func (w *windowSink) Close() error {
	w.overwritten.Add(uint64(w.events))
	w.chunks, w.spare, w.events, w.bytes = nil, nil, 0, 0
	return nil
}
