package main

import (
	"bytes"

	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/gotracer/tracer/internal/traceparent"
)

// Links between processes. tracehttp's client span carries the W3C
// traceparent it sent as the arg "traceparent.out"; the server span of a
// client in another process carries the one it received as
// "traceparent.in". Merge binds the two into an arrow with the format's
// flow fields on the spans themselves, bind_id and flow_out or flow_in
// (drawn from slice to slice, with no flow event to place in time): the
// bind id is the traceparent's parent id, the same at both ends. Perfetto
// reads them on X and B events, chrome://tracing on X events alone, so a
// request whose span at either end was written as a B (open across a
// flush) has its arrow in Perfetto only; binding it with flow events
// instead would need the span's phase at the other end, in another file.
// An end whose other end is not among the files (a client elsewhere, or a
// server that was not traced) draws nothing; Perfetto notes it as an info
// stat, chrome://tracing says nothing.

// linkEdits appends to edits those that bind ev, a span with a link arg,
// to the other end of its link. chrome://tracing merges the args of the
// two spans an arrow binds, and warns of a key both have: a server span's
// "goroutine" (spans drawn on lanes, see tracer.WithLanes, carry their
// goroutine's id) becomes "goroutine.in", as its traceparent is
// "traceparent.in".
func linkEdits(edits []edit, ev *tracefile.Event, ph byte) []edit {
	e, ok := linkEdit(ev, ph)
	if !ok {
		return edits
	}
	edits = append(edits, e)
	if g := ev.Arg("goroutine"); g != nil && bytes.HasSuffix(e.with, []byte(`"flow_in":true`)) {
		key := len(`"goroutine":`)
		if at := g.Span.Start - key; at >= 0 && string(ev.Raw[at:g.Span.Start]) == `"goroutine":` {
			edits = append(edits, edit{tracefile.Span{Start: at, End: g.Span.Start}, []byte(`"goroutine.in":`)})
		}
	}
	return edits
}

// linkEdit returns the edit that binds ev, a span with a link arg, to the
// other end of its link, and false for any other event.
func linkEdit(ev *tracefile.Event, ph byte) (edit, bool) {
	if (ph != 'X' && ph != 'B') || !ev.TSSpan.Valid() || len(ev.Args) == 0 {
		return edit{}, false
	}
	for _, dir := range [...]struct{ arg, field string }{{"traceparent.out", "flow_out"}, {"traceparent.in", "flow_in"}} {
		a := ev.Arg(dir.arg)
		if a == nil || !a.Str.Set {
			continue
		}
		_, parent, ok := traceparent.Parse(a.Str.String())
		if !ok || bytes.Contains(ev.Raw, []byte(`"bind_id"`)) {
			return edit{}, false
		}
		at := tracefile.Span{Start: ev.TSSpan.End, End: ev.TSSpan.End} // inserted after ts
		return edit{at, []byte(`,"bind_id":"` + traceparent.BindID(parent) + `","` + dir.field + `":true`)}, true
	}
	return edit{}, false
}
