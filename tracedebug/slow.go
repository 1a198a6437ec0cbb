package tracedebug

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gotracer/tracer"
	"go.uber.org/atomic"
)

// SlowConfig says when a SlowCatcher writes what its flight recorder
// holds, and where.
type SlowConfig struct {
	// Dir is the directory the recordings go to. It is made if it does
	// not exist.
	Dir string

	// Threshold is how long a request or a watched span may take: one that
	// takes longer is caught.
	Threshold time.Duration

	// Window is the flight recorder's: what each recording holds, the
	// last seconds before the slow request or span ended. Zero: the last
	// 10 seconds.
	Window tracer.FlightRecorderConfig

	// Every is the least time between two recordings: a slow request that
	// ends sooner after the last one is counted, not written. Zero: 10
	// seconds.
	Every time.Duration

	// MaxFiles is how many recordings Dir keeps, the newest: an older one
	// is removed as a new one is written. Zero: 10.
	MaxFiles int

	// Gzip compresses the recordings (their names end in .json.gz).
	Gzip bool
}

// SlowStats counts what a SlowCatcher caught.
type SlowStats struct {
	Caught  uint64 // requests and spans that took longer than the threshold
	Written uint64 // recordings written
	Skipped uint64 // caught less than Every after the last recording: not written
	Failed  uint64 // recordings that could not be written (see Err)
	Removed uint64 // older recordings removed for MaxFiles
}

// A SlowCatcher keeps the last seconds of the program in a flight
// recorder, the default tracer, and writes them to a directory when a
// request or a span it watches takes longer than a threshold: the
// recording holds that request whole, with what ran beside it. Only the
// watched spans are timed: every other span costs what it costs in any
// flight recorder.
type SlowCatcher struct {
	rec *tracer.FlightRecorder
	cfg SlowConfig

	mu   sync.Mutex // orders the recordings' writes and the removal of old ones
	last atomic.Int64

	closeMu sync.Mutex // orders wg.Add with Close's Wait
	closed  bool
	wg      sync.WaitGroup

	caught, written, skipped, failed, removed atomic.Uint64
	err                                       atomic.Error
}

// slowPrefix starts the name of every recording a SlowCatcher writes, and
// of nothing else it removes.
const slowPrefix = "slow-"

// CatchSlow starts a SlowCatcher: a flight recorder made with opts (those
// of tracer.NewFlightRecorder), which it makes the default tracer, so that
// the package-level functions and the integrations record into it, and
// the one /debug/tracer/recent serves. It returns an error wrapping
// tracer.ErrStarted if the default tracer runs already.
//
//	catch, err := tracedebug.CatchSlow(tracedebug.SlowConfig{Dir: "/var/tmp/slow", Threshold: 500 * time.Millisecond})
//	if err != nil { ... }
//	defer catch.Close()
//	http.ListenAndServe(addr, catch.Middleware(tracehttp.Middleware(mux)))
func CatchSlow(cfg SlowConfig, opts ...tracer.Option) (*SlowCatcher, error) {
	switch {
	case cfg.Dir == "":
		return nil, errors.New("tracedebug: CatchSlow needs a Dir")
	case cfg.Threshold <= 0:
		return nil, fmt.Errorf("tracedebug: CatchSlow needs a Threshold above 0, not %v", cfg.Threshold)
	case cfg.Every < 0 || cfg.MaxFiles < 0:
		return nil, fmt.Errorf("tracedebug: negative Every or MaxFiles in %+v", cfg)
	}
	if cfg.Window == (tracer.FlightRecorderConfig{}) {
		cfg.Window.MaxAge = 10 * time.Second
	}
	if cfg.Every == 0 {
		cfg.Every = 10 * time.Second
	}
	if cfg.MaxFiles == 0 {
		cfg.MaxFiles = 10
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("tracedebug: %w", err)
	}
	rec, err := tracer.NewFlightRecorder(cfg.Window, opts...)
	if err != nil {
		return nil, err
	}
	if err := tracer.SetDefault(rec.Tracer()); err != nil {
		_ = rec.Tracer().Close()
		return nil, fmt.Errorf("tracedebug: CatchSlow: %w", err)
	}
	SetFlightRecorder(rec)
	return &SlowCatcher{rec: rec, cfg: cfg}, nil
}

// Recorder returns the catcher's flight recorder.
func (c *SlowCatcher) Recorder() *tracer.FlightRecorder { return c.rec }

// Middleware times each request next serves, and catches those that take
// longer than the threshold, named by their method and path. Mount it
// outside tracehttp.Middleware, so that a request's span has ended when
// it is timed: catch.Middleware(tracehttp.Middleware(mux)).
func (c *SlowCatcher) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		next.ServeHTTP(w, r)
		if d := time.Since(start); d > c.cfg.Threshold {
			c.catch(r.Method+" "+r.URL.Path, d)
		}
	})
}

// Span records a span named name with args on the catcher's recorder, as
// tracer.Span does, and catches it at its end if it took longer than the
// threshold.
func (c *SlowCatcher) Span(name string, args ...tracer.Arg) func(...tracer.Arg) {
	start := time.Now()
	end := c.rec.Span(name, args...)
	return func(endArgs ...tracer.Arg) {
		end(endArgs...)
		if d := time.Since(start); d > c.cfg.Threshold {
			c.catch(name, d)
		}
	}
}

// catch writes a recording for cause, which took d, unless one was
// written less than Every ago. The recording is written on a goroutine of
// its own: the request or span that was slow is not made slower.
func (c *SlowCatcher) catch(cause string, d time.Duration) {
	c.caught.Inc()
	now := time.Now()
	last := c.last.Load()
	if last != 0 && now.Sub(time.Unix(0, last)) < c.cfg.Every || !c.last.CompareAndSwap(last, now.UnixNano()) {
		c.skipped.Inc()
		return
	}
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.write(now, cause, d)
	}()
}

// write writes the recording of cause, caught at when, and removes the
// oldest recordings past MaxFiles.
func (c *SlowCatcher) write(when time.Time, cause string, d time.Duration) {
	name := slowPrefix + when.UTC().Format("20060102T150405.000Z") + "-" + fileSafe(cause) + "-" + d.Round(time.Millisecond).String() + ".json"
	if c.cfg.Gzip {
		name += ".gz"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.rec.WriteFile(filepath.Join(c.cfg.Dir, name)); err != nil {
		c.failed.Inc()
		c.err.Store(err)
		return
	}
	c.written.Inc()
	entries, err := os.ReadDir(c.cfg.Dir)
	if err != nil {
		c.err.Store(err)
		return
	}
	var ours []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), slowPrefix) && e.Type().IsRegular() {
			ours = append(ours, e.Name())
		}
	}
	slices.Sort(ours) // by time: the names start with it
	for _, old := range ours[:max(0, len(ours)-c.cfg.MaxFiles)] {
		if err := os.Remove(filepath.Join(c.cfg.Dir, old)); err != nil {
			c.err.Store(err)
			continue
		}
		c.removed.Inc()
	}
}

// fileSafe makes cause a part of a file name: letters, digits, '.', '_'
// and '-' are kept, anything else becomes '_', and it is cut at 64 bytes.
func fileSafe(cause string) string {
	b := []byte(cause)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b[:min(len(b), 64)])
}

// Stats returns the counts so far.
func (c *SlowCatcher) Stats() SlowStats {
	return SlowStats{
		Caught:  c.caught.Load(),
		Written: c.written.Load(),
		Skipped: c.skipped.Load(),
		Failed:  c.failed.Load(),
		Removed: c.removed.Load(),
	}
}

// Err returns the last error writing or removing a recording, nil if none.
func (c *SlowCatcher) Err() error { return c.err.Load() }

// Wait waits for the recordings being written.
func (c *SlowCatcher) Wait() { c.wg.Wait() }

// Close waits for the recordings being written, stops the flight
// recorder, which stops being the default tracer and the one /recent
// serves, and returns the last error writing a recording, if any.
func (c *SlowCatcher) Close() error {
	c.closeMu.Lock()
	c.closed = true
	c.closeMu.Unlock()
	c.wg.Wait()
	recorder.CompareAndSwap(c.rec, nil)
	return errors.Join(c.rec.Tracer().Close(), c.Err())
}
