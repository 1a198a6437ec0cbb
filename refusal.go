package tracer

import "go.uber.org/atomic"

// A refusal holds the first error about input the tracer refused (a
// counter series no viewer can draw, say) until the flusher goroutine or
// Close reports it: the error handler is never called from a recording
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
	if !t.refusal.taken.Load() && t.refusal.taken.CompareAndSwap(false, true) {
		err := msg()
		t.refusal.err.Store(&err)
	}
}

// reportRefusal hands the first refusal to the error handler, once.
func (t *Tracer) reportRefusal() {
	if err := t.refusal.err.Swap(nil); err != nil {
		t.opts.onError(*err)
	}
}
