package tracer

import (
	"time"
)

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
