package tracer

import (
	"errors"
	"fmt"
	"time"
)

// DefaultStopTimeout is how long Close and Stop wait for the sink by
// default; see WithStopTimeout.
const DefaultStopTimeout = 5 * time.Second

// ErrTimeout is returned by Flush, Close and Stop when the sink did not
// take the trace within the stop timeout. The write goes on in the
// background.
var ErrTimeout = errors.New("tracer: timed out waiting for the trace to be written")

// wait runs f, which writes to the sink, and returns its error, or
// ErrTimeout once the stop timeout has passed while f goes on in the
// background.
func (t *Tracer) wait(f func() error) error {
	d := t.opts.stopTimeout
	if d == 0 {
		return f()
	}
	done := make(chan error, 1) // f never blocks on sending
	go func() { done <- f() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return stalled(d)
	}
}

// stalled is the error of a wait given up after d.
func stalled(d time.Duration) error {
	return fmt.Errorf("%w (%v): the sink is stalled", ErrTimeout, d)
}
