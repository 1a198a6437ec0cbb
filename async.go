package tracer

import "go.uber.org/atomic"

// lastID numbers async operations and flows, unique in the process.
var lastID atomic.Uint64

// An Async is an operation that is not tied to one goroutine: a request, a
// job in a queue, a download. It begins on one goroutine and may get
// instants, nested children and its end from any other; the viewers draw
// it on a track of its own under the process (a nestable async event,
// "b"/"n"/"e", with "id2":{"local":...}).
//
// An Async is a small value: copy it into the job or request it describes.
// Its methods are safe for concurrent use. The zero Async, which AsyncBegin
// returns when tracing is off or the category is disabled, records
// nothing.
type Async struct {
	t    *Tracer
	id   uint64
	name string
	cs   catScope
}

// AsyncBegin begins an async operation with a new process-unique id.
// Category and Scope args apply to all of its events.
func AsyncBegin(name string, args ...Arg) Async {
	return loadStd().asyncBegin(0, name, args)
}

// AsyncBeginID begins an async operation with an id the caller chose, for
// example a request id; 0 means "choose one". Events with the same id and category belong to one
// operation; give unrelated id spaces different categories or Scopes.
func AsyncBeginID(id uint64, name string, args ...Arg) Async {
	return loadStd().asyncBegin(id, name, args)
}

// AsyncBegin begins an async operation on t; see the package-level
// AsyncBegin.
func (t *Tracer) AsyncBegin(name string, args ...Arg) Async {
	return t.asyncBegin(0, name, args)
}

// AsyncBeginID begins an async operation with the caller's id on t.
func (t *Tracer) AsyncBeginID(id uint64, name string, args ...Arg) Async {
	return t.asyncBegin(id, name, args)
}

// asyncBegin begins an operation with id, or with a new id if id is 0. It
// is kept out of line so that the package-level functions inline to one
// atomic load and this call, which returns at once when tracing is off.
//
//go:noinline
func (t *Tracer) asyncBegin(id uint64, name string, args []Arg) Async {
	if t == nil {
		return Async{}
	}
	if id == 0 {
		id = lastID.Inc()
	}
	a := Async{t: t, id: id, name: name, cs: catScope{}.from(args)}
	if t.record(kindAsyncBegin, 0, a.cs, name, id, args) == nil {
		return Async{} // not recorded: its other events would dangle
	}
	return a
}

// ID returns the operation's id, 0 for the zero Async.
func (a Async) ID() uint64 { return a.id }

// Begin begins a child operation nested in a: it shares a's id, category
// and track, and must end before a does.
func (a Async) Begin(name string, args ...Arg) Async {
	if a.t == nil {
		return Async{}
	}
	child := Async{t: a.t, id: a.id, name: name, cs: a.cs}
	if a.t.record(kindAsyncBegin, 0, a.cs, name, a.id, args) == nil {
		return Async{}
	}
	return child
}

// Instant records a moment in the operation.
func (a Async) Instant(name string, args ...Arg) {
	if a.t != nil {
		a.t.record(kindAsyncInstant, 0, a.cs, name, a.id, args)
	}
}

// End ends the operation. The end event carries the operation's name,
// category and id, which is how the viewers pair it with its begin.
func (a Async) End(args ...Arg) {
	if a.t != nil {
		a.t.record(kindAsyncEnd, 0, a.cs, a.name, a.id, args)
	}
}
