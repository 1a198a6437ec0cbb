package tracer

// A Flow is an arrow in the viewers from one span to another, usually on
// other goroutines: from the span that queued a job to the span that ran
// it, and on to the one that used its result.
//
// Flow events bind to spans by time: FlowBegin, Step and End each attach
// to the innermost span that is open on the calling goroutine when they
// are called (Span or LongSpan, "s", "t" and "f" with "bp":"e"). Call them
// inside a span. Called outside any span, a flow event has nothing to
// attach to and the viewers do not draw that part of the arrow.
//
// A Flow is a small value: pass it along with the work it follows. Its
// methods are safe for concurrent use. The zero Flow, which FlowBegin
// returns when tracing is off or the category is disabled, records nothing.
type Flow struct {
	t    *Tracer
	id   uint64
	name string
	cs   catScope
}

// FlowBegin starts a flow, with a new process-unique id, at the span open
// on the calling goroutine. Category and Namespace args apply to all of its
// events (those given to Step and End are ignored): the viewers match the
// steps and end of a flow to its start by name, category and id.
func FlowBegin(name string, args ...Arg) Flow {
	return loadStd().flowStart(name, args)
}

// FlowBegin starts a flow on t; see the package-level FlowBegin.
func (t *Tracer) FlowBegin(name string, args ...Arg) Flow { return t.flowStart(name, args) }

//go:noinline
func (t *Tracer) flowStart(name string, args []Arg) Flow {
	if t == nil {
		return Flow{}
	}
	f := Flow{t: t, id: lastID.Inc(), name: name, cs: catScope{}.from(args)}
	if !t.allows(f.cs.cat) {
		return Flow{}
	}
	if t.record(goroutineID(), kindFlowBegin, 0, f.cs, name, f.id, args) == nil {
		return Flow{}
	}
	return f
}

// ID returns the flow's id, 0 for the zero Flow.
func (f Flow) ID() uint64 { return f.id }

// Step adds an intermediate point to the flow, at the span open on the
// calling goroutine.
func (f Flow) Step(args ...Arg) {
	if f.t != nil {
		f.t.record(goroutineID(), kindFlowStep, 0, f.cs, f.name, f.id, args)
	}
}

// End ends the flow at the span open on the calling goroutine.
func (f Flow) End(args ...Arg) {
	if f.t != nil {
		f.t.record(goroutineID(), kindFlowEnd, 0, f.cs, f.name, f.id, args)
	}
}
