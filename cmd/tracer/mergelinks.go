package main

import (
	"bytes"

	"github.com/gotracer/tracer/cmd/tracer/internal/trace"
	"github.com/gotracer/tracer/internal/traceparent"
)

// Links between processes. tracehttp's client span carries the W3C
// traceparent it sent as the arg "traceparent.out"; the server span of a
// client in another process carries the one it received as
// "traceparent.in". Merge binds the two into an arrow with the format's
// flow fields on the spans themselves, bind_id and flow_out or flow_in
// (both viewers draw them, from slice to slice, with no flow event to
// place in time): the bind id is the traceparent's parent id, the same at
// both ends. An end whose other end is not among the files (a client
// elsewhere, or a server that was not traced) draws nothing; Perfetto
// notes it as an info stat, chrome://tracing says nothing.

// linkEdit returns the edit that binds ev, a span with a link arg, to the
// other end of its link, and false for any other event.
func linkEdit(ev *trace.Event, ph byte) (edit, bool) {
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
		at := trace.Span{Start: ev.TSSpan.End, End: ev.TSSpan.End} // inserted after ts
		return edit{at, []byte(`,"bind_id":"` + traceparent.BindID(parent) + `","` + dir.field + `":true`)}, true
	}
	return edit{}, false
}
