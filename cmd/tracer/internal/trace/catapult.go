package trace

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gotracer/tracer/internal/tracefile"
)

// What chrome://tracing (catapult's trace_event_importer) warns of, and
// refuses, that Perfetto does not: it matches B and E events per thread
// in file order (an E ends the innermost B, whatever its name), merges
// an E's args into its B's, knows a few metadata names, and pairs async
// b and e events per category and id sorted by ts, an e ending the
// innermost b of its name. Its warnings' types are what Problem.Catapult
// holds.

// A catapultB is a B event catapult holds open on a thread.
type catapultB struct {
	name string
	ts   int64
	args []string // the keys of its args
	line int32
}

// catapultMeta are the metadata names catapult knows (others are a
// metadata_parse_error), and the arg each needs, if any.
var catapultMeta = map[string]string{
	"process_name": "", "process_labels": "labels", "process_uptime_seconds": "", "process_sort_index": "",
	"thread_name": "", "thread_sort_index": "", "num_cpus": "", "stackFrames": "stackFrames", "typeNames": "typeNames",
	"TraceConfig": "", "JitCodeAdded": "", "JitCodeMoved": "",
}

// catapultBegin follows a B event as catapult does.
func (a *Analyzer) catapultBegin(e *tracefile.Event) {
	k := threadKey(e)
	b := catapultB{name: e.Name.String(), ts: e.TS, line: int32(e.Line)}
	for i := range e.Args {
		b.args = append(b.args, e.Args[i].Key.String())
	}
	a.cataOpen[k] = append(a.cataOpen[k], b)
}

// catapultEnd follows an E event as catapult does, and returns what it
// warns of (the type and why), if anything, but for args merged, which it
// reports itself.
func (a *Analyzer) catapultEnd(e *tracefile.Event) (typ, why string) {
	k := threadKey(e)
	st := a.cataOpen[k]
	if len(st) == 0 {
		return "duration_parse_error", `chrome://tracing: "E phase event without a matching B phase event"`
	}
	b := st[len(st)-1]
	if len(st) == 1 {
		delete(a.cataOpen, k)
	} else {
		a.cataOpen[k] = st[:len(st)-1]
	}
	if e.TS < b.ts {
		return tracefile.Refuses, fmt.Sprintf("chrome://tracing refuses the file: the E ends %q (line %d), which began after it", b.name, b.line)
	}
	for i := range e.Args {
		// One warning per arg, as catapult gives them.
		if k := e.Args[i].Key.String(); slices.Contains(b.args, k) {
			a.problemV(e.Line, KindArgs, "", "arg_merge_error", "the E gives arg %q, which its B (line %d) has too: chrome://tracing warns (arg_merge_error) and keeps the E's; Perfetto keeps both",
				k, b.line)
		}
	}
	if name := e.Name.String(); name != "" && name != b.name {
		return "title_match_error", fmt.Sprintf("chrome://tracing ends %q (line %d) with it (\"Titles do not match\")", b.name, b.line)
	}
	return "", ""
}

// threadKey returns the thread of e as catapult tells threads apart.
func threadKey(e *tracefile.Event) string {
	return string(e.Pid.Raw) + "\x00" + string(e.Tid.Raw)
}

// catapultMetadata reports a metadata event catapult does not know.
func (a *Analyzer) catapultMetadata(e *tracefile.Event) {
	name := e.Name.String()
	need, ok := catapultMeta[name]
	switch {
	case !ok:
		a.problemV(e.Line, KindMetadata, "", "metadata_parse_error", "metadata named %q, which chrome://tracing does not know (metadata_parse_error); Perfetto ignores it", name)
	case need != "" && e.Arg(need) == nil:
		a.problemV(e.Line, KindMetadata, "", "metadata_parse_error", "%s metadata without args.%s: chrome://tracing warns (metadata_parse_error)", name, need)
	}
}

// An asyncEvent is a nestable async event (b, n, e), kept to the end of
// the file for the two viewers' pairing, which sorts them by ts.
type asyncEvent struct {
	ts       int64
	seq      int64
	line     int32
	ph       byte
	name     string
	catapult string // its key in catapult: category and id
	perfetto string // its track in Perfetto: process (id2.local), category and id
}

// keepAsync keeps a b, n or e event with a category and an id.
func (a *Analyzer) keepAsync(e *tracefile.Event, ph byte) {
	scope := string(e.Scope.Raw)
	local := ""
	if e.IDLocal {
		local = string(e.Pid.Raw)
	}
	a.asyncs = append(a.asyncs, asyncEvent{
		ts: e.TS, seq: a.Events, line: int32(e.Line), ph: ph, name: e.Name.String(),
		catapult: e.Cat.String() + "\x00" + scope + "\x00" + string(e.ID) + "\x00" + local,
		perfetto: local + "\x00" + e.Cat.String() + "\x00" + string(e.ID),
	})
}

// finishAsyncs pairs the async events kept as each viewer does, and
// reports what they warn of: catapult, a b or e left unmatched (per
// category and id, in ts order, an e ending the innermost b of its name);
// Perfetto, a slice left open inside one that ends (per track, in its
// sorter's order: misplaced_end_event, when a later event on the track
// comes after that end).
func (a *Analyzer) finishAsyncs() {
	evs := a.asyncs
	slices.SortStableFunc(evs, func(x, y asyncEvent) int {
		return cmp.Or(cmp.Compare(x.catapult, y.catapult), cmp.Compare(x.ts, y.ts), cmp.Compare(x.seq, y.seq))
	})
	for i := 0; i < len(evs); {
		j := i
		for j < len(evs) && evs[j].catapult == evs[i].catapult {
			j++
		}
		var stack []int
		matched := make([]bool, j-i)
		for k := i; k < j; k++ {
			switch evs[k].ph {
			case 'b':
				stack = append(stack, k)
			case 'e':
				p := len(stack) - 1
				for p >= 0 && evs[stack[p]].name != evs[k].name {
					p--
				}
				if p < 0 {
					a.problemV(int(evs[k].line), KindAsync, "", "async_slice_parse_error", "an async e event %q with no b of its name open (category and id): chrome://tracing warns (async_slice_parse_error); Perfetto ignores it", evs[k].name)
					continue
				}
				matched[stack[p]-i], matched[k-i] = true, true
				stack = stack[:p]
			}
		}
		for k := i; k < j; k++ {
			if evs[k].ph == 'b' && !matched[k-i] {
				a.problemV(int(evs[k].line), KindAsync, "", "async_slice_parse_error", "an async b event %q never ended: chrome://tracing warns (async_slice_parse_error) and ends it with the last event of its id; Perfetto shows it unfinished", evs[k].name)
			}
		}
		i = j
	}
	a.perfettoAsyncs(evs)
	a.asyncs = nil
}

// perfettoAsyncs replays the async events per Perfetto track, in the
// order its sorter takes them (by ts, then in file order), through its
// slice tracker's stack: a b begins a slice, an e ends the innermost
// open slice of its name, and when a slice that ended lies under one
// still open, the next event of the track after that end cuts the open
// one there (misplaced_end_event).
func (a *Analyzer) perfettoAsyncs(evs []asyncEvent) {
	slices.SortStableFunc(evs, func(x, y asyncEvent) int {
		return cmp.Or(cmp.Compare(x.perfetto, y.perfetto), cmp.Compare(x.ts, y.ts), cmp.Compare(x.seq, y.seq))
	})
	type open struct {
		start, end int64 // end -1: not ended
		ended      bool
		name       string
		line       int32
	}
	for i := 0; i < len(evs); {
		j := i
		for j < len(evs) && evs[j].perfetto == evs[i].perfetto {
			j++
		}
		var stack []open
		for k := i; k < j; k++ {
			ev := &evs[k]
			// MaybeCloseStack: pop what ended before ev; an open slice
			// above one that ended before ev is cut at its end.
			incomplete := false
			for q := len(stack) - 1; q >= 0; q-- {
				s := stack[q]
				if !s.ended {
					incomplete = true
					continue
				}
				if incomplete {
					if ev.ts <= s.end {
						continue
					}
					inner := stack[len(stack)-1]
					a.problemV(int(inner.line), KindAsync, "misplaced_end_event", "", "the async slice %q is still open when %q (line %d), on the same Perfetto track (category and id), ends around it: Perfetto cuts it there (misplaced_end_event); chrome://tracing pairs them apart",
						inner.name, s.name, s.line)
					stack = stack[:q]
					incomplete = false
					continue
				}
				if s.end < ev.ts || s.end == ev.ts && !(s.start == s.end && ev.ph == 'n') {
					stack = append(stack[:q], stack[q+1:]...)
				}
			}
			switch ev.ph {
			case 'b', 'n':
				s := open{start: ev.ts, name: ev.name, line: ev.line}
				if ev.ph == 'n' {
					s.end, s.ended = ev.ts, true
				}
				stack = append(stack, s)
			case 'e':
				for q := len(stack) - 1; q >= 0; q-- {
					if !stack[q].ended && (ev.name == "" || stack[q].name == ev.name) {
						stack[q].end, stack[q].ended = max(ev.ts, stack[q].start), true
						if q == len(stack)-1 {
							stack = stack[:q]
						}
						break
					}
				}
			}
		}
		i = j
	}
}
