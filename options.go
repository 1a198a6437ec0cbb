package tracer

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Defaults for the options below.
const (
	// DefaultBufferSize is the number of events each P's ring holds. A record
	// is 248 bytes, so the default costs 1 MiB of memory per P that records,
	// whatever the number of goroutines.
	DefaultBufferSize = 4096
	// DefaultFlushInterval is how often the flusher writes everything
	// recorded so far, at the latest.
	DefaultFlushInterval = 100 * time.Millisecond
)

// An Option configures a Tracer in New or Start.
type Option func(*options) error

type options struct {
	bufferSize    int
	flushInterval time.Duration
	processName   string
	processSort   int
	hasSort       bool
	onError       func(error)
	categories    *categoryFilter
	labels        []string
	sink          sinkOptions   // gzip and rotation: sink_gzip.go, sink_rotate.go
	stopTimeout   time.Duration // see WithStopTimeout
}

// buildOptions applies opts to the defaults.
func buildOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

func defaultOptions() options {
	return options{
		bufferSize:    DefaultBufferSize,
		flushInterval: DefaultFlushInterval,
		processName:   filepath.Base(os.Args[0]),
		stopTimeout:   DefaultStopTimeout,
	}
}

// WithBufferSize sets how many events each P's ring holds (rounded up to a
// power of two, at least 64). Memory is bounded by GOMAXPROCS rings of this
// size, 248 bytes an event. When a ring is full, new events on that P are
// dropped and counted in Stats and in the trace rather than blocking.
func WithBufferSize(events int) Option {
	return func(o *options) error {
		if events <= 0 || events > 1<<24 {
			return fmt.Errorf("tracer: buffer size %d out of range [1, %d]", events, 1<<24)
		}
		size := 64
		for size < events {
			size <<= 1
		}
		o.bufferSize = size
		return nil
	}
}

// WithFlushInterval sets how often the flusher writes what was recorded.
// The flusher also writes early whenever a ring is half full. Shorter
// intervals lose less on a crash and cost more CPU; 1ms to 10s is allowed.
func WithFlushInterval(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Millisecond || d > 10*time.Second {
			return fmt.Errorf("tracer: flush interval %v out of range [1ms, 10s]", d)
		}
		o.flushInterval = d
		return nil
	}
}

// WithProcessName sets the name the viewers show for this process. The
// default is the base name of the executable.
func WithProcessName(name string) Option {
	return func(o *options) error {
		o.processName = name
		return nil
	}
}

// WithProcessSortIndex sets where the viewers place this process among
// others in the same view: lower indexes come first.
func WithProcessSortIndex(index int) Option {
	return func(o *options) error {
		o.processSort, o.hasSort = index, true
		return nil
	}
}

// WithProcessLabels attaches labels to this process, shown next to its name
// by chrome://tracing (process_labels metadata; Perfetto ignores them).
func WithProcessLabels(labels ...string) Option {
	return func(o *options) error {
		o.labels = append(o.labels, labels...)
		return nil
	}
}

// WithErrorHandler sets the function the tracer calls when writing the trace
// fails, or rotating it. It is called from the flusher goroutine, never
// from a recording call, and must not block for long. The default prints
// each distinct error once to standard error. Errors never stop the
// application: the tracer goes on recording, and counts the failures in
// Stats.SinkErrors and the events of failed writes in Stats.Lost.
func WithErrorHandler(f func(error)) Option {
	return func(o *options) error {
		if f == nil {
			return fmt.Errorf("tracer: nil error handler")
		}
		o.onError = f
		return nil
	}
}
