package tracer

import (
	"compress/flate"
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
	clock         flushClock    // see flushclock.go
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
		clock:         realClock{},
	}
}

// WithBufferLimit sets the most memory, in bytes, that events waiting to
// be encoded take, DefaultBufferLimit unless set. The buffers grow in 64
// KiB chunks as a burst needs them and give the memory back after it; each
// P that records holds one chunk, whatever the limit. Past 4 MiB they grow
// only once a write to the sink has taken over 50 ms: a loop that records
// faster than the encoder waits for it there, rather than filling fresh
// memory, and a stalled sink still has the whole limit to fill. When they
// are full, recording waits for the flusher and the sink to make room
// (see WithLossless for when it drops instead).
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

// WithCategories records only events in the listed categories, and events
// with no category. Without it every category is recorded. Events of a
// disabled category cost about one atomic load and are not counted as
// dropped.
func WithCategories(names ...string) Option {
	return optionFunc(func(o *options) error {
		f, err := newCategoryFilter(names)
		o.categories = f
		return err
	})
}

// WithLanes draws goroutines on lanes reused the way a thread pool's
// threads are, instead of one track per goroutine: a goroutine takes a
// free lane of its group (its name, or else the name of its first span)
// when its first span starts and gives it back when its last span ends.
// A server that runs a goroutine per request then shows as many tracks
// per route as requests were in flight at once, rather than one per
// request, and what ran at any moment reads off one screen. Each slice
// keeps its goroutine id in its args. Recording costs the same; the
// flusher does the work. The environment variable TRACER_LANES=true sets
// it for a tracer started by TRACER_FILE.
//
// The default, a track per goroutine, is exact and what runtime/trace
// users know: use lanes for servers and pools of short-lived goroutines.
// Lanes do not combine with the Go runtime's view of goroutines
// (github.com/gotracer/tracer/goruntime), which draws on goroutine tracks.
func WithLanes() Option {
	return optionFunc(func(o *options) error {
		o.lanes = true
		return nil
	})
}

// WithGzip compresses the trace with gzip at level, from gzip.HuffmanOnly
// (-2) and gzip.NoCompression (0) through gzip.BestSpeed (1) to
// gzip.BestCompression (9); gzip.DefaultCompression (-1) means
// DefaultGzipLevel. A path ending in ".gz" is gzipped at
// DefaultGzipLevel without this option. With NewWithWriter or NewWithSink the
// stream is compressed.
func WithGzip(level int) Option {
	return optionFunc(func(o *options) error {
		if level < flate.HuffmanOnly || level > flate.BestCompression {
			return fmt.Errorf("tracer: gzip level %d out of range [%d, %d]", level, flate.HuffmanOnly, flate.BestCompression)
		}
		if level == flate.DefaultCompression {
			level = DefaultGzipLevel
		}
		o.sink.gzip, o.sink.level = true, level
		return nil
	})
}

// WithMaxFileSize starts a new file once the current one holds bytes bytes
// or more (compressed bytes, for a gzip trace), so that no file grows
// without bound. The old file is renamed; see WithMaxFiles. A file may
// pass the limit by up to one write, at most about 256 KiB. The smallest
// size allowed is 4 KiB.
//
// Each new file begins with the B events of the spans open at the time
// (so that it opens alone) and the names of their goroutines, about 150
// bytes a span, which do not count toward its size; and it takes at least
// as many bytes of events as that head before the next rotation, so that
// a program that leaves thousands of spans open, never ending them, does
// not write them again every few KiB.
func WithMaxFileSize(bytes int64) Option {
	return optionFunc(func(o *options) error {
		if bytes < minFileSize {
			return fmt.Errorf("tracer: max file size %d below %d", bytes, minFileSize)
		}
		o.sink.maxSize = bytes
		return nil
	})
}

// WithMaxFiles keeps at most n files of a rotated trace, the current one
// included, removing the oldest. Zero, the default, keeps them all. It
// needs WithMaxFileSize.
func WithMaxFiles(n int) Option {
	return optionFunc(func(o *options) error {
		if n < 0 {
			return fmt.Errorf("tracer: max files %d is negative", n)
		}
		o.sink.maxFiles = n
		return nil
	})
}

// WithStopTimeout sets how long Close and Stop wait for the trace to be
// written, DefaultStopTimeout unless set. A sink that stalls longer, such
// as a hung network file system or a pipe nobody reads, makes them return
// an error wrapping ErrTimeout instead of hanging the application: the
// write goes on in the background, and Close finishes the file there if
// the sink ever recovers. A process that exits before then leaves the
// file as a crash would (see docs/guarantees.md). Flush waits as long
// for a flush already stuck in the sink; when it writes itself, it waits
// for its write. Zero waits forever.
//
// Recording calls do not wait for a stalled sink, whatever this is: while
// it stalls, the buffers fill, and once they are full further events are
// dropped and counted (see WithLossless for the other choice).
func WithStopTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) error {
		if d < 0 {
			return fmt.Errorf("tracer: negative stop timeout %v", d)
		}
		o.stopTimeout = d
		return nil
	})
}

// DefaultStopTimeout is how long Close and Stop wait for the sink by
// default; see WithStopTimeout.
const DefaultStopTimeout = 5 * time.Second
