package trace

import (
	"bytes"
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

// A catapultB is a B event catapult holds open on a thread. It holds no
// pointer: a thread's stack may be 200,000 deep, and grows by copies the
// garbage collector would otherwise follow.
type catapultB struct {
	ts   int64
	name int32 // where its name begins in catapultThread.names
	line int32
}

// A catapultThread is what catapult holds open on one thread: its B
// events, their names (decoded, end to end, a stack as they are), and
// the keys of the args of those that have args.
type catapultThread struct {
	open  []catapultB
	names []byte
	args  []catapultArgs
}

// push holds b, named name, open.
func (th *catapultThread) push(b catapultB, name []byte) {
	b.name = int32(len(th.names))
	th.names = append(th.names, name...)
	th.open = append(th.open, b)
}

// pop returns the B event held open last, and its name, which is valid
// until the next push.
func (th *catapultThread) pop() (catapultB, []byte) {
	b := th.open[len(th.open)-1]
	th.open = th.open[:len(th.open)-1]
	name := th.names[b.name:]
	th.names = th.names[:b.name]
	return b, name
}

// catapultArgs are the keys of the args of the B event at depth in its
// thread's stack.
type catapultArgs struct {
	depth int
	keys  []string
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
	th := a.catapultThread(e)
	if len(e.Args) > 0 {
		keys := make([]string, len(e.Args))
		for i := range e.Args {
			keys[i] = e.Args[i].Key.String()
		}
		th.args = append(th.args, catapultArgs{depth: len(th.open), keys: keys})
	}
	th.push(catapultB{ts: e.TS, line: int32(e.Line)}, a.decode(e.Name))
}

// catapultEnd follows an E event as catapult does, and returns what it
// warns of (the type and why), if anything, but for args merged, which it
// reports itself.
func (a *Analyzer) catapultEnd(e *tracefile.Event) (typ, why string) {
	th := a.catapultThread(e)
	if len(th.open) == 0 {
		return "duration_parse_error", `chrome://tracing: "E phase event without a matching B phase event"`
	}
	b, bName := th.pop()
	var keys []string
	if n := len(th.args); n > 0 && th.args[n-1].depth == len(th.open) {
		keys = th.args[n-1].keys
		th.args = th.args[:n-1]
	}
	if e.TS < b.ts {
		return tracefile.Refuses, fmt.Sprintf("chrome://tracing refuses the file: the E ends %q (line %d), which began after it", bName, b.line)
	}
	for i := range e.Args {
		// One warning per arg, as catapult gives them.
		if k := e.Args[i].Key.String(); slices.Contains(keys, k) {
			a.problemV(e.Line, KindArgs, "", "arg_merge_error", "the E gives arg %q, which its B (line %d) has too: chrome://tracing warns (arg_merge_error) and keeps the E's; Perfetto keeps both",
				k, b.line)
		}
	}
	if len(e.Name.Raw) > 0 && !bytes.Equal(a.decode(e.Name), bName) {
		return "title_match_error", fmt.Sprintf("chrome://tracing ends %q (line %d) with it (\"Titles do not match\")", bName, b.line)
	}
	return "", ""
}

// catapultThread returns what catapult holds open on the thread of e.
func (a *Analyzer) catapultThread(e *tracefile.Event) *catapultThread {
	a.keyBuf = append(append(append(a.keyBuf[:0], e.Pid.Raw...), 0), e.Tid.Raw...)
	th := a.cataOpen[string(a.keyBuf)]
	if th == nil {
		th = &catapultThread{}
		a.cataOpen[string(a.keyBuf)] = th
	}
	return th
}

// decode returns s decoded, valid until the next call.
func (a *Analyzer) decode(s tracefile.Str) []byte {
	if !s.Escaped {
		return s.Raw
	}
	a.decoded = s.Append(a.decoded[:0])
	return a.decoded
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
