package tracer

import "go.uber.org/atomic"

// A refusal holds the first error about misuse (a counter series no
// viewer can draw, spans ended out of order) until the flusher goroutine
// or Close reports it: the error handler is never called from a recording
// call.
type refusal struct {
	taken atomic.Bool
	err   atomic.Pointer[error]
}

// refuse counts something the caller gave and the tracer left out. The
// first time, it keeps the error msg returns for reportRefusal; msg is
// called only then, so misuse in a loop costs no formatting.
func (t *Tracer) refuse(msg func() error) {
	t.refused.Inc()
	t.refusal.keep(msg)
}

// keep keeps the error msg returns for reportRefusal, if it is the first
// misuse: one report a tracer, so misuse in a loop does not flood the log.
func (r *refusal) keep(msg func() error) {
	if !r.taken.Load() && r.taken.CompareAndSwap(false, true) {
		err := msg()
		r.err.Store(&err)
	}
}

// reportRefusal hands the first refusal to the error handler, once.
func (t *Tracer) reportRefusal() {
	if err := t.refusal.err.Swap(nil); err != nil {
		t.opts.onError(*err)
	}
}
