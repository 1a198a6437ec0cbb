package tracer

import "go.uber.org/atomic"

// A misuse is a kind of mistake in the calls a tracer was given. Each is
// reported once a tracer, so misuse in a loop does not flood the log, and
// one kind does not hide another.
type misuse int

const (
	misuseCounter    misuse = iota // a counter series no viewer can draw
	misuseOrder                    // spans ended out of order
	misuseEnd                      // an end function called twice or on another goroutine
	misuseNeverEnded               // spans still open at Close
	misuseKinds
)

// A refusal holds the first error of each kind of misuse until the flusher
// goroutine or Close reports it: the error handler is never called from a
// recording call.
type refusal struct {
	taken [misuseKinds]atomic.Bool
	errs  [misuseKinds]atomic.Pointer[error]
}

// keep keeps the error msg returns for report, if it is the first
// misuse of its kind.
func (r *refusal) keep(kind misuse, msg func() error) {
	if !r.taken[kind].Load() && r.taken[kind].CompareAndSwap(false, true) {
		err := msg()
		r.errs[kind].Store(&err)
	}
}

// report hands each kind's first misuse to onError, once.
func (r *refusal) report(onError func(error)) {
	for i := range r.errs {
		if err := r.errs[i].Swap(nil); err != nil {
			onError(*err)
		}
	}
}

// refuse counts something the caller gave and the tracer left out. The
// first time, it keeps the error msg returns for report; msg is
// called only then, so misuse in a loop costs no formatting.
func (r *recorder) refuse(msg func() error) {
	r.refused.Inc()
	r.refusal.keep(misuseCounter, msg)
}
