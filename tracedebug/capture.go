package tracedebug

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gotracer/tracer"
	"go.uber.org/atomic"
)

// MaxSeconds is the longest capture /debug/tracer/trace takes.
const MaxSeconds = 300

// defaultSeconds is a capture's length when the request names none.
const defaultSeconds = 5

// stopTimeout bounds how long the end of a capture waits for a client
// that takes nothing: a write to the response (at most 32 KiB, or a gzip
// block) under way for longer is cut. A client that reads, however
// slowly, gets the capture whole (a capture of minutes over a slow
// tunnel may take long to drain), and the time the tracer takes to hand
// the response what is left is never the client's. Tests shorten it.
var stopTimeout = atomic.NewDuration(2 * time.Second)

// capturing is set while a capture runs: one at a time.
var capturing atomic.Bool

// serveTrace answers with a trace of the next seconds: see the package doc.
func serveTrace(w http.ResponseWriter, r *http.Request) {
	secs, err := seconds(r)
	if err != nil {
		http.Error(w, "tracedebug: "+err.Error(), http.StatusBadRequest)
		return
	}
	d := time.Duration(secs * float64(time.Second))
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.WriteTimeout > 0 && srv.WriteTimeout <= d {
		http.Error(w, fmt.Sprintf("tracedebug: a capture of %v exceeds the server's WriteTimeout (%v): ask for less", d, srv.WriteTimeout), http.StatusBadRequest)
		return
	}
	if !capturing.CompareAndSwap(false, true) {
		http.Error(w, "tracedebug: a capture is running: one at a time", http.StatusConflict)
		return
	}
	defer capturing.Store(false)

	gz := r.URL.Query().Get("gzip") == "1"
	s := &stream{w: w, rc: http.NewResponseController(w), gzip: gz}
	end, err := record(s)
	if err != nil {
		http.Error(w, "tracedebug: "+err.Error(), http.StatusInternalServerError)
		return
	}
	attachment(w.Header(), "trace", gz)
	s.open()

	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.Context().Done(): // the client went away
	}
	// The end ends the spans still open at the window's end and the
	// trace. A client that stopped reading makes it give up once a write
	// has been under way for the stop timeout, and so does the program's
	// tracer's own stop timeout (its sink stalled): the write under way is
	// then cut, so that nothing writes to w once the handler returns. A
	// tee that fell behind its client (or whose write failed) has stopped
	// writing: what s sent stands, and shut ends the gzip member, so the
	// client gets a trace cut as by a crash, which both viewers load.
	if err := end(); errors.Is(err, errClientStopped) || errors.Is(err, tracer.ErrTimeout) {
		_ = s.rc.SetWriteDeadline(time.Now())
	}
	s.shut()
}

// record starts recording the program's trace to s, a tee of the
// program's default tracer (see tracer.Tee), which clips the trace to its
// window as `tracer cut` does, and returns the function that ends it. If
// the default tracer runs (tracer.Start, TRACER_FILE, a flight recorder,
// tracetest), its own file loses nothing; otherwise record starts one
// that writes nothing but the tee, which end stops, so that while nothing
// is captured, instrumented code costs what it costs with tracing off.
func record(s *stream) (end func() error, err error) {
	for {
		if tr := tracer.Default(); tr != nil {
			te, err := tr.Tee(s)
			if errors.Is(err, tracer.ErrClosed) {
				continue // it was stopped meanwhile
			}
			if err != nil {
				return nil, err
			}
			return func() error { return stopTee(te, s) }, nil
		}
		// No stop timeout: io.Discard never stalls, and stopTee bounds
		// the wait for a client that stopped reading.
		tr, err := tracer.NewWithWriter(io.Discard,
			tracer.WithErrorHandler(func(error) {}),
			tracer.WithStopTimeout(0))
		if err != nil {
			return nil, err
		}
		te, err := tr.Tee(s) // its head waits in s until tr is the default
		if err == nil {
			if err = tracer.SetDefault(tr); err == nil {
				// Close ends the tee first, at the window's end: the
				// program's calls cost nothing again at once.
				return func() error { _ = tr.Close(); return stopTee(te, s) }, nil
			}
		}
		_ = tr.Close()
		if te != nil {
			_ = te.Stop() // its writer is done with s
		}
		s.reset()
		if !errors.Is(err, tracer.ErrStarted) {
			return nil, err
		}
		// The program started its tracer meanwhile: tee it.
	}
}

// errClientStopped is stopTee's error for a client that left a write
// untaken for the stop timeout.
var errClientStopped = errors.New("tracedebug: the client stopped reading")

// stopTee ends the capture te, which writes to s, waiting for its client
// as long as it takes what s sends: once a write to the response has been
// under way for stopTimeout, the caller cuts it, which ends the tee. A
// tee of the program's own tracer waits at most that tracer's stop
// timeout (tracer.WithStopTimeout) all the same, as Tee.Stop does.
func stopTee(te *tracer.Tee, s *stream) error {
	done := make(chan error, 1)
	go func() { done <- te.Stop() }()
	limit := stopTimeout.Load()
	tick := time.NewTicker(limit / 4)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if s.blockedFor() >= limit {
				return errClientStopped
			}
		}
	}
}

// seconds reads the request's seconds parameter.
func seconds(r *http.Request) (float64, error) {
	v := r.URL.Query().Get("seconds")
	if v == "" {
		return defaultSeconds, nil
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(s) || s <= 0 || s > MaxSeconds {
		return 0, fmt.Errorf("seconds=%q: want a number of seconds above 0, at most %d", v, MaxSeconds)
	}
	return s, nil
}

// A stream is the capture's tracer's writer: the response, once open.
// Until then it holds what the tracer writes (the trace's head, written
// when the tracer is made), so that no byte goes out before the tracer is
// known to be the default; after shut it writes nothing, since the
// handler has returned. With gzip it compresses the trace as one gzip
// member, flushed with each write so that the client reads as it comes:
// the tracer's own gzip stream is a member a flush, of which
// chrome://tracing reads the first only.
type stream struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	rc   *http.ResponseController
	gzip bool
	zw   *gzip.Writer
	held []byte
	live bool // open was called: writes go to w
	done bool // shut was called: writes fail
	err  error
	// since is when the write to the response under way began (since
	// epoch, plus one), 0 between writes: see stopTee. It is read
	// without mu, which a blocked write holds.
	since atomic.Int64
}

// epoch is what stream.since counts from: a monotonic clock.
var epoch = time.Now()

// writeClock is what a write to the response is timed on: the time since
// epoch. A test that means "a client that reads" sets one on which a
// write takes no time, so that a loaded machine, which may not run the
// writing goroutine for longer than the stop timeout, is not taken for a
// client that stopped reading.
var writeClock = func() time.Duration { return time.Since(epoch) }

// blockedFor returns how long the write to the response under way has
// lasted, 0 if none is.
func (s *stream) blockedFor() time.Duration {
	at := s.since.Load()
	if at == 0 {
		return 0
	}
	return writeClock() - time.Duration(at-1)
}

// timed runs f, a write to the response or its flush, as the write under
// way.
func (s *stream) timed(f func() error) error {
	s.since.Store(int64(writeClock()) + 1)
	defer s.since.Store(0)
	return f()
}

// A timedWriter is the response as the stream writes it, each write
// timed (see stopTee).
type timedWriter struct{ s *stream }

func (t timedWriter) Write(p []byte) (n int, err error) {
	err = t.s.timed(func() error { n, err = t.s.w.Write(p); return err })
	return n, err
}

func (s *stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.done:
		return 0, io.ErrClosedPipe
	case !s.live:
		s.held = append(s.held, p...)
		return len(p), nil
	}
	return s.send(p)
}

// sendChunk is how much of a write send hands the response at a time: a
// slow client is not taken for one that stopped reading while it takes
// one (see stopTee). (A gzip writer hands it its blocks as they come.)
const sendChunk = 32 << 10

// send writes p to the response and flushes it, under mu.
func (s *stream) send(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := len(p), error(nil)
	if s.zw != nil {
		if _, err = s.zw.Write(p); err == nil {
			err = s.zw.Flush()
		}
	} else {
		for n = 0; n < len(p) && err == nil; {
			var m int
			m, err = timedWriter{s}.Write(p[n:min(len(p), n+sendChunk)])
			n += m
		}
	}
	if err == nil {
		err = s.timed(s.rc.Flush) // streamed: the client sees each flush
	}
	s.err = err
	return n, err
}

// open sends what is held, and what comes next as it comes.
func (s *stream) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live = true
	if s.gzip {
		s.zw = gzip.NewWriter(timedWriter{s})
	}
	if len(s.held) > 0 {
		_, _ = s.send(s.held)
		s.held = nil
	}
}

// reset forgets what s holds: the head of a tracer that did not become
// the default.
func (s *stream) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = nil
}

// shut ends the gzip member and makes every later write fail, once the
// one under way returns.
func (s *stream) shut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.zw != nil && s.err == nil {
		_ = s.zw.Close()
	}
	s.done = true
}
