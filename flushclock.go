package tracer

import (
	"math"
	"time"
)

// The flusher's clock.
//
// Five decisions follow time: the flusher passes every flush interval;
// it writes as a B event every span still open that started more than a
// flush interval before the pass (so that a trace cut by a kill shows
// what was running); a flight recorder pushes out what it wrote more
// than MaxAge ago; and the writer judges its sink stalled when a write
// has not returned for stallAfter, after which events that find the
// buffers full are dropped (progress.go); and Flush, Close, Tee and
// Tee.Stop give up waiting for a stalled sink after the stop timeout.
// They come from a flushClock, as zap's entries take their time from a
// zapcore.Clock: the real one, or a test's, which passes only when told,
// tells which spans are old, how late it is and whether the sink
// stalled, and gives up when told, so that a test says "every span open
// now is old", "pass now", "a minute later", "the write under way has
// stalled" or "give up now" instead of sleeping and hoping the machine
// kept up.

// A flushClock is where the flusher takes its time from.
type flushClock interface {
	// ticks returns the channel on which the flusher is told to pass,
	// every interval, and the function that stops it.
	ticks(interval time.Duration) (<-chan time.Time, func())

	// oldBefore returns the nanotime before which a span still open at a
	// pass that takes the events before cut is old enough to be written
	// as a B event.
	oldBefore(cut int64, interval time.Duration) int64

	// now returns the nanotime a flight recorder's window takes for now:
	// what it wrote more than MaxAge before is pushed out.
	now() int64

	// giveUp returns the channel that fires when a wait for the sink has
	// lasted d, and the function that stops it.
	giveUp(d time.Duration) (<-chan time.Time, func())

	// The writer times its writes on it, to judge the sink stalled.
	stallClock
}

// realClock is the flushClock of every tracer but a test's.
type realClock struct{}

func (realClock) ticks(interval time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(interval)
	return t.C, t.Stop
}

func (realClock) oldBefore(cut int64, interval time.Duration) int64 { return cut - int64(interval) }

func (realClock) now() int64 { return nanotime() }

func (realClock) giveUp(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

func (realClock) writeTime() int64 { return nanotime() }

// never is the oldBefore of a clock for which no span is old.
const never = math.MinInt64

// withClock makes the flusher take its time from c: for tests.
func withClock(c flushClock) Option {
	return optionFunc(func(o *options) error {
		o.clock = c
		return nil
	})
}
