package tracer

// Instant scopes, as the "s" field of an instant event. The viewers draw a
// thread-scoped instant on its goroutine's track, a process-scoped one
// across the process and a global one across the whole trace.
const (
	scopeThread  = 't'
	scopeProcess = 'p'
	scopeGlobal  = 'g'
)

// Instant records a moment on the calling goroutine's track, for example a
// cache miss or a retry.
func Instant(name string, args ...Arg) {
	if t := loadStd(); t != nil {
		t.instant(scopeThread, name, args)
	}
}

// InstantProcess records a moment that concerns the whole process, drawn on
// the process's own track.
func InstantProcess(name string, args ...Arg) {
	if t := loadStd(); t != nil {
		t.instant(scopeProcess, name, args)
	}
}

// InstantGlobal records a moment that concerns the whole trace, drawn on a
// track of its own above every process.
func InstantGlobal(name string, args ...Arg) {
	if t := loadStd(); t != nil {
		t.instant(scopeGlobal, name, args)
	}
}

// Instant records a thread-scoped instant on t; see the package-level Instant.
func (t *Tracer) Instant(name string, args ...Arg) { t.instant(scopeThread, name, args) }

// InstantProcess records a process-scoped instant on t.
func (t *Tracer) InstantProcess(name string, args ...Arg) { t.instant(scopeProcess, name, args) }

// InstantGlobal records a global instant on t.
func (t *Tracer) InstantGlobal(name string, args ...Arg) { t.instant(scopeGlobal, name, args) }

// instant is kept out of line so that the package-level functions inline to
// one atomic load and a branch when tracing is off.
//
//go:noinline
func (t *Tracer) instant(scope uint8, name string, args []Arg) {
	if t == nil {
		return
	}
	t.record(goroutineID(), kindInstant, scope, catScope{}, name, 0, args)
}
