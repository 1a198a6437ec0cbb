package tracer

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
	giveUp, stop := t.opts.clock.giveUp(d)
	defer stop()
	select {
	case err := <-done:
		return err
	case <-giveUp:
		return stalled(d)
	}
}
