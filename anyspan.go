package tracer

// A SpanHandle is a span that may end on any goroutine: the span of an
// operation that a library starts in one place and ends in another, as
// OpenTelemetry's instrumentation does. Start one with StartSpan, or with
// a parent's StartChild, and end it with End.
//
// A SpanHandle that ends on the goroutine that started it, with no Span
// it contains still open, is drawn exactly as Span draws a span: nested
// on that goroutine's track, one "X" event, or "B" and "E" events if it
// stays open longer than a flush interval. SpanHandles it contains that
// are still open cross its end: they become async slices (or, once their
// "B" is written, end with it), as when a Span below them ends first.
// Otherwise it cannot nest on that track, and it is drawn as an async
// slice (a nestable async event, "b"/"e", under the process, as Async
// draws) for its whole duration: when it ends on another goroutine, when
// it ends while Spans it contains are still open, and when a span that
// began before it on its goroutine ends first. The spans of its goroutine
// keep their nesting either way. One drawn as an async slice that is still
// open when the tracer closes, or when a rotated file ends, ends there
// (chrome://tracing leaves out a "b" without its "e"); one on its track
// stays a "B" event, drawn to the end of the trace, as an open Span is.
//
// Two cases stay on the track whatever happens, since the span is in the
// file already. Once its "B" event is written (it stayed open longer than
// a flush interval), it ends on its track: at its End if no Span it
// contains is open then, else when they have ended. And when a span that
// began before it on its goroutine ends, it ends with that span, and its
// own End is ignored.
//
// A child (see StartChild) that began on another goroutine than its
// parent's gets a flow arrow (flow events "s" and "f", as Flow draws them)
// from its parent to the slice open on the child's goroutine at the
// child's start: the child itself if it is drawn on that track, the slice
// it was started in if it is drawn as an async slice (both viewers bind
// flow events to goroutine tracks only), and no arrow if it was started
// in none. The arrow leaves the parent's
// goroutine at the parent's start: Perfetto binds a flow event to the
// newest slice on its track, which may have ended already, so the arrow
// leaves from where the parent begins. A child that began on its parent's
// goroutine gets none: on the track, it is inside its parent; as an async
// slice, it is on the parent's goroutine (its "tid"). Nor does a child
// whose parent had ended, or had left its goroutine's stack, when it
// began.
//
// A SpanHandle is a small value; its methods are safe for concurrent use.
// End it once: a second End is counted in Stats.Unmatched and ignored. The
// zero SpanHandle, which StartSpan returns when tracing is off or the
// category is disabled, records nothing. StartSpan, StartChild and End
// allocate nothing.
type SpanHandle struct {
	t    *Tracer
	id   uint64
	name string
	cs   catScope
}

// StartSpan starts a span, on the default tracer, that may end on any
// goroutine; see SpanHandle. Category and Namespace args apply to all of
// its events; those given to End are ignored.
func StartSpan(name string, args ...Arg) SpanHandle {
	return loadStd().startAny(0, name, args)
}

// StartSpan starts a span on t that may end on any goroutine; see the
// package-level StartSpan.
func (t *Tracer) StartSpan(name string, args ...Arg) SpanHandle {
	return t.startAny(0, name, args)
}

// StartChild starts a span that may end on any goroutine, as StartSpan
// does, and records that s is its parent: the viewers draw a flow arrow
// from s to the child when the child is not drawn nested in s on s's
// goroutine (see SpanHandle). Of the child's args, the first 31 are kept.
// On the zero SpanHandle it records nothing.
func (s SpanHandle) StartChild(name string, args ...Arg) SpanHandle {
	return s.t.startAny(s.id, name, args)
}

// ID returns the span's id, unique in the process, 0 for the zero
// SpanHandle. An async slice's id2.local is this id.
func (s SpanHandle) ID() uint64 { return s.id }

// End ends the span, from any goroutine, with args that join the span's
// (Category and Namespace args are ignored).
func (s SpanHandle) End(args ...Arg) {
	if s.t != nil {
		s.t.record(goroutineID(), kindAnyEnd, 0, s.cs, "", s.id, args)
	}
}

// startAny starts a SpanHandle, a child of the SpanHandle with id parent
// unless parent is 0. It is kept out of line so that the package-level
// StartSpan inlines to one atomic load and this call.
//
//go:noinline
func (t *Tracer) startAny(parent uint64, name string, args []Arg) SpanHandle {
	if t == nil {
		return SpanHandle{}
	}
	cs := catScope{}.from(args)
	if !t.allows(cs.cat) {
		return SpanHandle{}
	}
	id := lastID.Inc()
	var ok bool
	switch {
	case parent == 0:
		ok = t.record(goroutineID(), kindAnyBegin, 0, cs, name, id, args) != nil
	case len(args) < 8: // most spans: less of a buffer to clear
		var buf [8]Arg
		ok = t.recordChild(buf[:], parent, name, id, cs, args)
	default:
		var buf [maxArgs]Arg
		ok = t.recordChild(buf[:], parent, name, id, cs, args)
	}
	if !ok {
		return SpanHandle{}
	}
	return SpanHandle{t: t, id: id, name: name, cs: cs}
}

// recordChild records the start of a SpanHandle whose parent's id is
// parent: its args, as many as buf holds but one, then the parent's id.
func (t *Tracer) recordChild(buf []Arg, parent uint64, name string, id uint64, cs catScope, args []Arg) bool {
	n := copy(buf[:len(buf)-1], args)
	buf[n] = Arg{kind: argParent, num: parent}
	return t.record(goroutineID(), kindAnyBegin, flagParent, cs, name, id, buf[:n+1]) != nil
}
