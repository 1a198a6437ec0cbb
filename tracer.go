package tracer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unsafe"

	"go.uber.org/atomic"
)

// A Tracer records events into per-P buffers and writes them to its
// file from a background goroutine. All its methods are safe for concurrent
// use. A nil *Tracer is valid and records nothing, so code can hold one
// unconditionally.
type Tracer struct {
	opts options
	base int64 // nanotime of ts 0

	// recorder is the record path's state (ringbuffer.go). Its methods,
	// record first, are promoted: the API calls t.record.
	recorder

	flusher flusher // encodes and hands batches to its writer: flusher.go

	// asyncTracks says, for a hash of each open async operation, whether
	// one of its children holds its track (async.go). A tracer's own, so
	// that a child another tracer left open never changes how this one's
	// children are drawn.
	asyncTracks [1024]atomic.Bool

	done      chan struct{} // closed when the flusher goroutine returns
	closeOnce sync.Once
	closeErr  error
}

// New creates a Tracer writing to the file at path, truncating it. The file
// holds a loadable trace from the moment New returns: its first line is "["
// and its second the process_name event. The caller must Close the tracer
// to end the file cleanly; a file left without Close still opens in both
// viewers. New returns an error if the file cannot be created or its first
// line written (as on a full disk).
//
// A path ending in ".gz" is gzipped (see WithGzip), and WithMaxFileSize
// rotates the file. NewWithWriter writes to any io.Writer instead. A path may
// name a named pipe: New waits for a process to open it for reading at
// most the stop timeout (WithStopTimeout).
func New(path string, opts ...Option) (*Tracer, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	o.sink.fifoWait = o.stopTimeout
	s, err := openSink(path, &o.sink)
	if err != nil {
		return nil, err
	}
	t, err := newTracer(s, o)
	if err != nil {
		s.Close()
		return nil, err
	}
	return t, nil
}

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
	out, _ := o.sink.onStream(s)
	t, err := newTracer(out, o)
	if err != nil {
		out.Close()
		return nil, err
	}
	return t, nil
}

// newTracer starts a tracer writing to s.
func newTracer(s sink, o options) (*Tracer, error) {
	verifyGoid()
	if o.onError == nil {
		o.onError = printErrorOnce()
	}
	o.onError = recoverHandler(o.onError)
	t := &Tracer{
		opts: o,
		done: make(chan struct{}),
	}
	t.recorder.prepare(o.lossless, o.bufferLimit, o.categories, &t.flusher)
	chooseClock() // first: it reads files, which must not come between the two clocks
	t.base = t.flusher.prepare(&t.recorder, &t.opts, s)
	if err := t.flusher.writeHeader(); err != nil {
		return nil, fmt.Errorf("tracer: writing trace header: %w", err)
	}
	t.recorder.start()
	t.flusher.start(t.done)
	return t, nil
}

// flushHere is Flush on the calling goroutine, with the flusher's mu held: the
// pass and the wait for the writer give up at the stop timeout, as wait
// does, and the events not encoded then go out with a later pass.
func (t *Tracer) flushHere() error {
	defer t.flusher.mu.Unlock()
	f := &t.flusher
	if f.isClosed() {
		return ErrClosed
	}
	d := t.opts.stopTimeout
	if d == 0 {
		f.pass(true)
		return f.sync()
	}
	giveUp, stop := t.opts.clock.giveUp(d)
	defer stop()
	if !f.passBy(giveUp) {
		return stalled(d)
	}
	return f.syncBy(giveUp)
}

// Flush writes every event recorded before the call and returns once the
// sink has taken them, with the write errors since the last Flush. The
// tracer does this on its own every flush interval; call Flush before a
// point where the file must be complete, for example before handing it to
// someone. If the sink is stalled, Flush gives up after the stop timeout
// (WithStopTimeout) with ErrTimeout. Once Close has begun, Flush returns
// ErrClosed: Close writes everything itself.
func (t *Tracer) Flush() error {
	if t == nil {
		return nil
	}
	if t.onOwnGoroutine() {
		return reentrant("Flush")
	}
	if !t.recording.Load() {
		// Closing: Close's last pass writes everything. Not waiting for
		// the flusher's mu here also keeps a Sink's Close, which runs under it,
		// from waiting for itself.
		return ErrClosed
	}
	flush := func() error { // with the flusher's mu held
		defer t.flusher.mu.Unlock()
		if t.flusher.isClosed() {
			return ErrClosed
		}
		t.flusher.pass(true)
		return t.flusher.sync()
	}
	if t.flusher.mu.TryLock() {
		// Nothing is being encoded: encode on this goroutine, whose cache
		// holds the records it just wrote, without a goroutine to wait
		// for (a Flush in a loop paid more for that than for encoding).
		return t.flushHere()
	}
	return t.wait(func() error {
		t.flusher.mu.Lock()
		return flush()
	})
}

// Close stops recording, writes every event recorded so far, ends the JSON
// array and closes the file. Events recorded after Close began are dropped
// and counted in Stats.Late. Close may be called while other goroutines are
// still recording, and more than once; later calls return the first call's
// error. If the sink stalls, Close returns ErrTimeout after the stop
// timeout (WithStopTimeout) and finishes in the background. If the tracer
// dropped events, or spans were still open, Close tells the error handler
// once, with what to change, after the tracer is closed: a handler that
// calls Close gets the first call's error.
func (t *Tracer) Close() error {
	if t == nil {
		return nil
	}
	if t.onOwnGoroutine() {
		return reentrant("Close")
	}
	first := false
	t.closeOnce.Do(func() {
		first = true
		// A closed default tracer is no default: Start may start another.
		std.CompareAndSwap(unsafe.Pointer(t), nil)
		t.recorder.stopRecording()
		t.closeErr = t.wait(func() error {
			<-t.done
			t.flusher.mu.Lock()
			t.flusher.close()
			t.flusher.mu.Unlock()
			// Closing the sink runs user code (a Sink's Close, the rest
			// of an event cut by an io.Writer): no lock is held.
			return t.flusher.out.finish()
		})
	})
	if first {
		// User code too, once the tracer is closed.
		t.refusal.report(t.opts.onError)
		if st := t.Stats(); st.Dropped > 0 {
			t.opts.onError(dropReport(st))
		}
	}
	return t.closeErr
}

// Stats returns the tracer's counters so far.
func (t *Tracer) Stats() Stats {
	if t == nil {
		return Stats{}
	}
	s := t.flusher.stats()
	s.Late = t.lateDrops.Load()
	s.Dropped = t.dropped.Load()
	s.Refused = t.refused.Load()
	return s
}

// printErrorOnce returns the default error handler: one line on standard
// error per distinct error message, so a full disk does not flood the log.
func printErrorOnce() func(error) {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(err error) {
		mu.Lock()
		defer mu.Unlock()
		msg := err.Error()
		if seen[msg] || len(seen) > 100 {
			return
		}
		seen[msg] = true
		if !strings.HasPrefix(msg, "tracer: ") {
			msg = "tracer: " + msg
		}
		fmt.Fprintf(os.Stderr, "%s (further identical errors are counted in Stats, not printed)\n", msg)
	}
}

// std is the default tracer behind the package-level functions, nil when
// tracing is off. It is an UnsafePointer rather than a Pointer[Tracer]
// because the generic Load costs more in the inliner's budget, and Span
// must stay inlinable for tracing-off to cost one load and a branch.
var std atomic.UnsafePointer

// startMu serialises Start and SetDefault, so that a Start that will lose
// never creates its file.
var startMu sync.Mutex

// loadStd returns the default tracer, or nil.
func loadStd() *Tracer { return (*Tracer)(std.Load()) }

// Start starts the default tracer, which the package-level recording
// functions use, writing to the file at path. Until Start and after Stop
// those functions do nothing and cost about one atomic load. It returns
// ErrStarted if the default tracer runs already, but for one that
// TRACER_FILE started: whoever set the variable chose where the trace
// goes, so that one goes on (path and opts are left aside), Start returns
// nil, and one line on standard error says so.
func Start(path string, opts ...Option) error {
	// Only the caller that will win may create the file: New truncates
	// it, so a loser would wipe the winner's header and end the array.
	startMu.Lock()
	defer startMu.Unlock()
	if t := loadStd(); t != nil {
		if startedFromEnv(t, path) {
			return nil
		}
		return ErrStarted
	}
	t, err := New(path, opts...)
	if err != nil {
		return err
	}
	t.adoptDefaults(t.opts.categories != nil)
	if !std.CompareAndSwap(nil, unsafe.Pointer(t)) {
		t.Close()
		return ErrStarted
	}
	return nil
}

// SetDefault makes t, which may be a FlightRecorder's or one writing to a
// Sink, the default tracer that the package-level functions use. It
// returns ErrStarted if the default tracer is already running, and an
// error wrapping ErrClosed if t is closed. Stop closes t, and so does
// closing t itself: either way the default tracer is cleared.
func SetDefault(t *Tracer) error {
	if t == nil {
		return errors.New("tracer: SetDefault of a nil Tracer")
	}
	startMu.Lock()
	defer startMu.Unlock()
	if !t.recording.Load() {
		return fmt.Errorf("%w: SetDefault of a closed Tracer", ErrClosed)
	}
	if loadStd() != nil {
		return ErrStarted
	}
	t.adoptDefaults(true) // its categories are its maker's choice
	if !std.CompareAndSwap(nil, unsafe.Pointer(t)) {
		return ErrStarted
	}
	return nil
}

// Stop stops the default tracer and closes its file, as Close does. It
// returns nil if the default tracer was not running.
func Stop() error {
	if t := loadStd(); t != nil && t.onOwnGoroutine() {
		return reentrant("Stop") // and the default tracer stays as it is
	}
	return (*Tracer)(std.Swap(nil)).Close()
}

// Default returns the default tracer, or nil when tracing is off.
func Default() *Tracer { return loadStd() }

// Flush writes every event the default tracer recorded so far.
func Flush() error { return loadStd().Flush() }
