package tracer

import (
	"sync"
	"time"

	"go.uber.org/atomic"
)

// stallAfter is how long one write may take before the sink counts as
// stalled and, in default mode, events that find the buffers full are
// dropped. A write is at most a few hundred KiB, which a healthy disk
// takes in well under a millisecond; but the kernel makes a process that
// writes faster than the disk wait in write(2) (dirty page throttling),
// for up to a few hundred milliseconds on the machines we measured on,
// and that is a disk keeping up slowly, not a stalled one.
const stallAfter = 500 * time.Millisecond

// A stallClock times the writes by which the writer judges its sink
// behind (slowWrite) or stalled (stallAfter): nanotime, or a test's clock
// (see flushclock.go), on which a write takes no time until the test says
// the sink stalled, so that a machine too loaded to run the writer for
// half a second does not make a test's tracer drop events.
type stallClock interface {
	// writeTime returns the time now on the clock writes are timed on,
	// in nanoseconds, never 0.
	writeTime() int64
}

// A progressSignal wakes the goroutines waiting for room in the buffers
// when the writer or the flusher frees some.
type progressSignal struct {
	mu      sync.Mutex
	ch      chan struct{}
	waiters atomic.Int32
}

// arm registers a waiter and returns the channel that will be closed on
// the next broadcast. The caller checks its condition after arm, so a
// broadcast between the check and the wait is not missed, and then calls
// wait or disarm.
func (s *progressSignal) arm() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	s.waiters.Inc()
	return s.ch
}

func (s *progressSignal) disarm() { s.waiters.Dec() }

// wait waits for a broadcast on ch, for stop to be closed, or for d.
func (s *progressSignal) wait(ch, stop chan struct{}, d time.Duration) {
	timer := time.NewTimer(d)
	select {
	case <-ch:
	case <-stop:
	case <-timer.C:
	}
	timer.Stop()
	s.waiters.Dec()
}

// broadcast wakes every waiter. It costs one atomic load when nobody
// waits.
func (s *progressSignal) broadcast() {
	if s.waiters.Load() == 0 {
		return
	}
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
}
