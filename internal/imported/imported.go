// Package imported lets a package outside the core (goruntime, in its own
// module) put events that did not come through the recording path into a
// Tracer's file: events with timestamps and tracks of their own, such as the
// Go runtime's execution trace converted as it is produced.
//
// The tracer package sets the variables in init. They are variables, not
// functions of this package, because this package cannot import the tracer
// (which imports it), and an internal package is the only way to share them
// without adding to the tracer's public API.
package imported

// A Source holds encoded events waiting for a Tracer's flusher, which calls
// its methods with its encoding lock held, so never two at a time.
type Source interface {
	// Drain appends whole events to b, each one a line of JSON followed by
	// ",\n", at most about limit bytes of them, and returns the extended
	// buffer, how many events it appended and whether more are waiting.
	// Only events that may be in any order in the file (X, C, i, M, b/e of
	// ids no one else uses) may be drained: they are written after
	// whatever the flusher encoded in the same pass.
	Drain(b []byte, limit int) (out []byte, events int, more bool)

	// Named tells the source that goroutine gid's track was named (or
	// given a sort index): the flusher is writing that event now.
	Named(gid uint64, name string, hasName bool, sort int64, hasSort bool)

	// Spanned tells the source that goroutine gid recorded a span (or a
	// Begin) that the flusher is writing now. Called for every such event
	// with another goroutine than the last call's.
	Spanned(gid uint64)
}

var (
	// Attach makes s the source of tracer t (a *tracer.Tracer), replacing
	// any other, and tells s the goroutine names the package-level
	// functions remember. It returns the process id the tracer writes and
	// the runtime.nanotime reading of its ts 0.
	Attach func(t any, s Source) (pid int, base int64, err error)

	// Detach removes s from t if it is t's source. Events s still holds
	// are not drained. It does not wait for t's flusher, which a stalled
	// sink can hold up: a Drain under way may still end after it.
	Detach func(t any, s Source)

	// Wake asks t's flusher for a pass soon, which drains its source; it
	// does not wait for it. A source that is full calls it, and waits for
	// the Drain.
	Wake func(t any)
)
