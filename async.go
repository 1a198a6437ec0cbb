package tracer

import "go.uber.org/atomic"

// lastID numbers async operations and flows, unique in the process.
var lastID atomic.Uint64

// An Async is an operation that is not tied to one goroutine: a request, a
// job in a queue, a download. It begins on one goroutine and may get
// instants, nested children and its end from any other; the viewers draw
// it on a track of its own under the process (a nestable async event,
// "b"/"n"/"e", with "id2":{"local":...}). One still open when the tracer
// closes, or when a rotated file ends, ends there, with its children
// (chrome://tracing leaves out a "b" without its "e").
//
// An Async is a small value: copy it into the job or request it describes.
// Its methods are safe for concurrent use. The zero Async, which AsyncBegin
// returns when tracing is off or the category is disabled, records
// nothing.
type Async struct {
	t    *Tracer
	id   uint64
	name string
	cs   catScope // cs.track: the operation's track it is on
	node uint32   // 0 for an operation, a number unique in the process for a child
	flag int      // 1 + the index in t.asyncTracks of its parent's track it holds, 0 if none
}

// Children and tracks.
//
// The viewers draw an operation's nested children on the operation's own
// track, as a stack: a child must end before a sibling that began after
// it, or both viewers draw them wrong (Perfetto reports a misplaced end,
// catapult pairs the ends with the wrong begins). Children may come from
// any goroutine, so two may well overlap. So a child takes its parent's
// track only while no sibling holds it; a child that begins while a
// sibling is open gets a track of its own ("0x1.2a": the parent's id and a
// number unique in the process), on which its own children nest. In
// Perfetto it shows as a row of its own under the process, in catapult as
// a slice of its own; both draw its true times.
//
// Whether a child holds its parent's track is kept in the tracer's
// asyncTracks, a fixed table of flags indexed by a hash of the parent: two
// parents that share a flag only make some children take tracks of their
// own that could have nested. A child that never ends holds its flag for
// the life of its tracer.

// lastNode numbers children, and the tracks of their own some get.
var lastNode atomic.Uint32

// trackFlag returns the index in a.t.asyncTracks of the flag of a's
// children.
func (a Async) trackFlag() int {
	h := a.id ^ uint64(a.node)<<32 ^ uint64(a.cs.scope)<<16 ^ uint64(a.cs.cat)<<48
	h *= 0x9e3779b97f4a7c15
	return int(h >> 54) // the top 10 bits
}

// AsyncBegin begins an async operation with a new process-unique id.
// Category and Namespace args apply to all of its events; those given to its
// later events are ignored.
func AsyncBegin(name string, args ...Arg) Async {
	return loadStd().asyncBegin(0, name, args)
}

// AsyncBeginID begins an async operation with an id the caller chose, for
// example a request id; 0 means "choose one". Events with the same id and category belong to one
// operation; give unrelated id spaces different categories or Namespaces.
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
	if !t.allows(a.cs.cat) {
		return Async{}
	}
	if t.record(goroutineID(), kindAsyncBegin, 0, a.cs, name, id, args) == nil {
		return Async{} // not recorded: its other events would dangle
	}
	return a
}

// ID returns the operation's id, 0 for the zero Async.
func (a Async) ID() uint64 { return a.id }

// Begin begins a child operation nested in a: it shares a's id and
// category (Category and Namespace args are ignored), and must end before a
// does. Children may begin and end on any goroutine, and may overlap: a
// child that begins while a sibling is still open is drawn on a track of
// its own, named after the operation's id and a number ("0x1.2a"), rather
// than nested in a.
func (a Async) Begin(name string, args ...Arg) Async {
	if a.t == nil {
		return Async{}
	}
	child := Async{t: a.t, id: a.id, name: name, cs: a.cs, node: lastNode.Inc()}
	if child.node == 0 { // wrapped: 0 is an operation's
		child.node = lastNode.Inc()
	}
	// Take the track before reading the clock (in record), and release it
	// after (in End): a sibling's end is never later than the next begin.
	if i := a.trackFlag(); a.t.asyncTracks[i].CompareAndSwap(false, true) {
		child.flag = i + 1
	} else {
		child.cs.track = child.node
	}
	if a.t.record(goroutineID(), kindAsyncBegin, 0, child.cs, name, a.id, args) == nil {
		child.release()
		return Async{}
	}
	return child
}

// release gives back the parent's track a child holds.
func (a Async) release() {
	if a.flag != 0 {
		a.t.asyncTracks[a.flag-1].Store(false)
	}
}

// Instant records a moment in the operation.
func (a Async) Instant(name string, args ...Arg) {
	if a.t != nil {
		a.t.record(goroutineID(), kindAsyncInstant, 0, a.cs, name, a.id, args)
	}
}

// End ends the operation. The end event carries the operation's name,
// category and id, which is how the viewers pair it with its begin:
// Category and Namespace args are ignored, and the end is recorded even if
// the operation's category was switched off since it began.
func (a Async) End(args ...Arg) {
	if a.t != nil {
		a.t.record(goroutineID(), kindAsyncEnd, 0, a.cs, a.name, a.id, args)
		a.release()
	}
}
