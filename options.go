package tracer

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Defaults for the options below.
const (
	// DefaultBufferLimit is the most memory the buffers of recorded events
	// take unless WithBufferLimit says otherwise. A bare span takes 64
	// bytes, so this holds half a million spans waiting to be encoded.
	DefaultBufferLimit = 32 << 20
	// DefaultFlushInterval is how often the flusher writes everything
	// recorded so far, at the latest.
	DefaultFlushInterval = 100 * time.Millisecond
)

// An Option configures a Tracer: pass what the With functions return to
// New, NewWithWriter, NewWithSink, NewFlightRecorder or Start.
type Option interface {
	apply(*options) error
}

// optionFunc is an Option made of a function.
type optionFunc func(*options) error

func (f optionFunc) apply(o *options) error { return f(o) }

type options struct {
	bufferLimit   int
	lossless      bool
	flushInterval time.Duration
	processName   string
	processSort   int
	hasSort       bool
	onError       func(error)
	categories    *categoryFilter
	labels        []string
	sink          sinkOptions   // gzip and rotation: sink_gzip.go, sink_rotate.go
	stopTimeout   time.Duration // see WithStopTimeout
	lanes         bool          // see WithLanes
}

// buildOptions applies opts to the defaults.
func buildOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			continue // New(path, nil) is New(path)
		}
		if err := opt.apply(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

func defaultOptions() options {
	return options{
		bufferLimit:   DefaultBufferLimit,
		flushInterval: DefaultFlushInterval,
		processName:   filepath.Base(os.Args[0]),
		stopTimeout:   DefaultStopTimeout,
	}
}

// WithBufferLimit sets the most memory, in bytes, that events waiting to
// be encoded take, DefaultBufferLimit unless set. The buffers grow in 64
// KiB chunks as a burst needs them and give the memory back after it; each
// P that records holds one chunk, whatever the limit. When they are full,
// recording waits for the flusher and the sink to make room (see
// WithLossless for when it drops instead).
func WithBufferLimit(bytes int) Option {
	return optionFunc(func(o *options) error {
		if bytes < chunkBytes || bytes > 1<<40 {
			return fmt.Errorf("tracer: buffer limit %d out of range [%d, %d]", bytes, chunkBytes, 1<<40)
		}
		o.bufferLimit = bytes
		return nil
	})
}

// WithLossless makes recording wait for the sink however long it stalls,
// so that no event is ever dropped. Without it, recording also waits when
// the buffers are full, but only for a sink that makes progress: once a
// write has been under way for half a second, events that find the buffers full are
// dropped and counted instead, so that a hung disk or a pipe nobody reads
// does not hang the program. With it, such a sink hangs every goroutine
// that records, until Close (which stays bounded by WithStopTimeout).
func WithLossless() Option {
	return optionFunc(func(o *options) error {
		o.lossless = true
		return nil
	})
}

// WithFlushInterval sets how often the flusher writes what was recorded.
// The flusher also writes early whenever a P fills a chunk. Shorter
// intervals lose less on a crash and cost more CPU; 1ms to 10s is allowed.
func WithFlushInterval(d time.Duration) Option {
	return optionFunc(func(o *options) error {
		if d < time.Millisecond || d > 10*time.Second {
			return fmt.Errorf("tracer: flush interval %v out of range [1ms, 10s]", d)
		}
		o.flushInterval = d
		return nil
	})
}

// WithProcessName sets the name the viewers show for this process. The
// default is the base name of the executable.
func WithProcessName(name string) Option {
	return optionFunc(func(o *options) error {
		o.processName = name
		return nil
	})
}

// WithProcessSortIndex sets where the viewers place this process among
// others in the same view: lower indexes come first.
func WithProcessSortIndex(index int) Option {
	return optionFunc(func(o *options) error {
		o.processSort, o.hasSort = index, true
		return nil
	})
}

// WithProcessLabels attaches labels to this process, shown next to its name
// by chrome://tracing (process_labels metadata; Perfetto ignores them).
func WithProcessLabels(labels ...string) Option {
	return optionFunc(func(o *options) error {
		o.labels = append(o.labels, labels...)
		return nil
	})
}

// WithErrorHandler sets the function the tracer calls when writing the trace
// fails, or rotating it, and the first time it leaves out input no viewer
// can show (see Counter). It is called from the flusher and writer
// goroutines or Close, never from a recording call, and must not block for
// long. The default prints
// each distinct error once to standard error. Errors never stop the
// application: the tracer goes on recording, and counts the failures in
// Stats.SinkErrors and the events of failed writes in Stats.Lost.
func WithErrorHandler(f func(error)) Option {
	return optionFunc(func(o *options) error {
		if f == nil {
			return fmt.Errorf("tracer: nil error handler")
		}
		o.onError = f
		return nil
	})
}
