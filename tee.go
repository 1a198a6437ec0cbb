package tracer

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// A Tee is a second destination of a running Tracer: from Tracer.Tee
// until Stop, its io.Writer gets a trace of its own of what the tracer
// records meanwhile, while the tracer's file gets everything it would get
// without it. A server's capture on demand (package tracedebug) and a
// test's recorder (package tracetest) beside a tracer that TRACER_FILE
// started are tees.
//
// The tee's trace stands alone and loads in both viewers, and it is its
// window, from the call to Stop, as `tracer cut` cuts one: it holds every
// event recorded in the window, and the spans, SpanHandles and async
// operations open when it began, clipped to begin at its start (those on
// one goroutine a nanosecond apart, outermost first, so that both viewers
// nest them as they were: at most a nanosecond a level, and one more,
// before the window); those still open at its end end there, and its trace ends with
// "]". What ended before the call is not in it, nor the steps and ends of
// the flows begun before it, whose starts are not (the viewers would draw
// them from nothing). The tracer's file gets every span whole, as without
// the tee.
//
// The io.Writer runs on a goroutine of the tee's own, never on the
// tracer's goroutines and never under its locks, and the tracer never
// waits for it: the tee holds what the writer has not taken yet, up to
// the tracer's buffer limit (WithBufferLimit). Past it the tee takes
// nothing more, and Stop says so; its trace then ends as a file cut by a
// crash does, which both viewers still load. A write error ends the tee
// the same way. Neither changes anything for the tracer's own file.
//
// A write to the tracer's own file that loses events (a full disk, a
// broken pipe) ends its tees the same way, as cut files, and their Stop
// says so: the tracer then writes again what the file lost, which a tee,
// that got every event, would hold twice.
type Tee struct {
	t    *Tracer
	s    *teeStream
	once sync.Once
	err  error
}

// Tee makes w a second destination of t until the Tee's Stop: see Tee.
// It returns ErrClosed if t is closed or closing. It waits for t to
// write what was recorded before it, as Flush does: if the sink is
// stalled, it gives up after the stop timeout (WithStopTimeout) with
// ErrTimeout. A tracer may have
// several tees at once; each costs the tracer a copy of every encoded
// batch while it runs, and nothing once stopped.
func (t *Tracer) Tee(w io.Writer) (*Tee, error) {
	if t == nil {
		return nil, errors.New("tracer: Tee of a nil Tracer")
	}
	if t.onOwnGoroutine() {
		return nil, reentrant("Tee")
	}
	if !t.recording.Load() {
		return nil, ErrClosed
	}
	e := &Tee{t: t, s: newTeeStream(w, max(t.opts.bufferLimit, 1<<20))}
	go e.s.run()
	attached := make(chan error, 1)
	go func() {
		t.flusher.mu.Lock()
		defer t.flusher.mu.Unlock()
		attached <- t.flusher.attachTee(e.s)
	}()
	var err error
	if d := t.opts.stopTimeout; d == 0 {
		err = <-attached
	} else {
		giveUp, stop := t.opts.clock.giveUp(d)
		defer stop()
		select {
		case err = <-attached:
		case <-giveUp:
			// The flusher is held up by a stalled sink: the tee attaches
			// once it is free, and ends at once.
			go func() {
				if <-attached == nil {
					e.Stop()
				} else {
					e.s.end(nil)
				}
			}()
			return nil, stalled(d)
		}
	}
	if err != nil {
		e.s.end(nil) // its goroutine ends
		return nil, err
	}
	return e, nil
}

// Flush writes to the tee's io.Writer every event the tracer recorded
// before the call, as the tracer's Flush does for its file, and returns
// once the writer has taken them, with the error that ended the tee, if
// one did. If the tracer is closed, it waits for the tee's end instead.
func (e *Tee) Flush() error {
	if e.onOwnGoroutine() {
		return reentrant("Tee.Flush")
	}
	// The file's write errors are the file's: the tee got the events.
	switch err := e.t.Flush(); {
	case errors.Is(err, ErrClosed):
		return e.waitDone() // Close ended the tee: its end is on its way
	case errors.Is(err, ErrTimeout):
		return err
	}
	return e.s.waitFor(e.s.taken())
}

// Stop ends the tee: the events recorded before the call reach its
// io.Writer, then the end of its trace (the spans still open end there),
// and Stop returns once the writer has taken them, with the error that
// ended the tee early, if one did (the writer's, or that it fell behind).
// The tracer goes on. If the tracer is closed first, Close ends the tee's
// trace, and Stop only waits for the writer. Later calls return the first
// one's error. If the sink or the writer is stalled, Stop gives up after
// the tracer's stop timeout (WithStopTimeout) with ErrTimeout, and the
// tee ends in the background.
func (e *Tee) Stop() error {
	if e.onOwnGoroutine() {
		return reentrant("Tee.Stop")
	}
	e.once.Do(func() {
		t := e.t
		err := t.wait(func() error {
			t.flusher.mu.Lock()
			defer t.flusher.mu.Unlock()
			if !t.flusher.isClosed() {
				t.flusher.pass(true)
				t.flusher.detachTee(e.s)
			}
			return nil
		})
		if err == nil {
			err = e.waitDone()
		}
		e.err = err
	})
	return e.err
}

// onOwnGoroutine reports whether the caller is the tee's writer, or one
// of its tracer's goroutines, which Flush and Stop would wait for.
func (e *Tee) onOwnGoroutine() bool {
	return e.t.onOwnGoroutine() || e.s.gid.Load() == goroutineID()
}

// waitDone waits, at most the stop timeout, until the tee's writer has
// taken everything, and returns why the tee ended early, if it did.
func (e *Tee) waitDone() error {
	d := e.t.opts.stopTimeout
	if d == 0 {
		<-e.s.done
		return e.s.cause()
	}
	giveUp, stop := e.t.opts.clock.giveUp(d)
	defer stop()
	select {
	case <-e.s.done:
		return e.s.cause()
	case <-giveUp:
		return fmt.Errorf("%w (%v): the tee's io.Writer is stalled", ErrTimeout, d)
	}
}
