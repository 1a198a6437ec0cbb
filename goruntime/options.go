package goruntime

import (
	"errors"
	"time"
)

// An Option changes what Start and Convert keep of the execution trace.
type Option func(*options) error

type options struct {
	minState     time.Duration // states shorter than this are left out
	allGoroutine bool          // states of goroutines that recorded no span too
	maxPending   int           // bytes of converted events waiting for a flush
	counterEvery time.Duration // at most one sample of each counter per interval
}

// DefaultMinState is the shortest scheduling state kept by default. On a
// busy worker pool most states are a few microseconds long (a goroutine
// runnable between two slices of work), too short to see at the zoom
// where spans are read and most of the file's bytes: see docs/goruntime.md
// for the measurements this default comes from.
const DefaultMinState = 10 * time.Microsecond

// DefaultMaxPending bounds the converted events waiting for the tracer's
// next flush; past it, the conversion waits for the flush (see
// WithMaxPending).
const DefaultMaxPending = 8 << 20

func defaultOptions() options {
	return options{
		minState:     DefaultMinState,
		maxPending:   DefaultMaxPending,
		counterEvery: time.Millisecond,
	}
}

func buildOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// WithMinState keeps only scheduling states lasting at least d (0 keeps
// every one). A left-out state leaves a gap on the runtime track; GC
// slices, counters, regions and tasks are kept whatever their length.
func WithMinState(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return errors.New("goruntime: negative minimum state duration")
		}
		o.minState = d
		return nil
	}
}

// WithAllGoroutines keeps the scheduling states of every goroutine. By
// default Start keeps only those of goroutines that recorded a span (or
// were named), which are the tracks a reader of the trace looks at; the
// runtime's own goroutines and idle pools add tracks and bytes but little
// to read. Convert, which has no spans to go by, always keeps them all.
func WithAllGoroutines() Option {
	return func(o *options) error {
		o.allGoroutine = true
		return nil
	}
}

// WithMaxPending bounds the bytes of converted events waiting for the
// tracer's next flush (DefaultMaxPending by default). When they reach it,
// the conversion wakes the tracer's flusher and waits for it, holding up
// the execution tracer, whose data waits in the runtime meanwhile; nothing
// is dropped while the tracer's sink keeps up. Only if nothing is drained
// for a second (a stalled sink) are converted events dropped, counted in
// the goruntime.dropped counter and reported by stop.
func WithMaxPending(bytes int) Option {
	return func(o *options) error {
		if bytes < 64<<10 {
			return errors.New("goruntime: WithMaxPending below 64 KiB")
		}
		o.maxPending = bytes
		return nil
	}
}
