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
		return fmt.Errorf("%w (%v): the sink is stalled", ErrTimeout, d)
	}
}
