package goruntime

import (
	"errors"
	"fmt"
	"io"
	rtrace "runtime/trace"
	"sync"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/imported"
	"golang.org/x/exp/trace"
)

// commitBytes is how much converted output the reader gathers before it
// hands it to the tracer: small enough that a flush never waits for a
// whole generation, large enough that the lock is taken rarely.
const commitBytes = 32 << 10

// Start starts the Go runtime's execution tracer and streams what it
// records into t, on the same timeline as t's spans, until stop is
// called. Only one execution trace can run in a process: Start fails if
// runtime/trace (or go test -trace, or another Start) is already tracing.
//
// The execution tracer hands its data over a generation at a time (about
// a second), so the runtime's view reaches the file about a second behind
// the spans; what was converted goes out with t's normal flushes. Call
// stop before closing t: it stops the execution tracer, converts the rest,
// flushes t, and returns any error of the conversion, or one saying how
// many events were dropped because t's sink stalled (see WithMaxPending).
func Start(t *tracer.Tracer, opts ...Option) (stop func() error, err error) {
	if t == nil {
		return nil, errors.New("goruntime: Start of a nil Tracer")
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	s := newSession(o)
	pid, base, err := imported.Attach(t, s)
	if err != nil {
		return nil, fmt.Errorf("goruntime: %w", err)
	}
	s.pid, s.tracer = pid, t
	s.conv = newConverter(o, pid, base, s)
	pr, pw := io.Pipe()
	if err := rtrace.Start(pw); err != nil {
		imported.Detach(t, s)
		return nil, fmt.Errorf("goruntime: starting the execution tracer: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.read(pr) }()

	var once sync.Once
	var stopErr error
	stop = func() error {
		once.Do(func() {
			// The last generation is converted only now: let the flusher
			// see the spans recorded so far first, which decide what is kept.
			flushErr := t.Flush()
			rtrace.Stop()
			pw.Close()
			err := <-done
			s.conv.finish()
			s.commit()
			err = errors.Join(err, flushErr, t.Flush())
			imported.Detach(t, s)
			s.mu.Lock()
			if s.dropped > 0 {
				err = errors.Join(err, fmt.Errorf("goruntime: %d events dropped because the tracer's sink stalled (see WithMaxPending)", s.dropped))
			}
			s.mu.Unlock()
			stopErr = err
		})
		return stopErr
	}
	return stop, nil
}

// read converts the execution trace from r as it comes. On an error it
// drains r, so that the execution tracer never blocks on the pipe.
func (s *session) read(r io.Reader) (err error) {
	defer func() {
		if err != nil {
			io.Copy(io.Discard, r)
		}
	}()
	rd, err := trace.NewReader(r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("goruntime: reading the execution trace: %w", err)
	}
	for {
		ev, err := rd.ReadEvent()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("goruntime: reading the execution trace: %w", err)
		}
		s.conv.handle(&ev)
		if len(s.conv.buf) >= commitBytes || ev.Kind() == trace.EventSync {
			s.commit()
		}
	}
}
