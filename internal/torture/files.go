//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/gotracer/tracer/internal/tracefile"
)

// Checking one trace file: strict JSON (after the repository's own repair
// of a cut file, tracefile.Terminate, where the file may be cut), the
// framing the viewers need, B/E and X nested on every track, every E
// after its B, async events paired, and the ids of the events it holds.

// objectHead starts a plain trace file that Close closed; until then the
// file is the array behind as many spaces.
const objectHead = `{"displayTimeUnit":"ns","traceEvents":`

// joinLimit is the largest trace, uncompressed, whose gzip members Close
// joins into one (sink_gzip.go: chrome://tracing cannot load a larger
// one anyway).
const joinLimit = 256 << 20

// fileRules says what a file must be.
type fileRules struct {
	mustClose bool // closed by a clean Close: strict JSON as it is, no repair
	asyncPair bool // a whole trace (not one of several rotated files): every e has its b
	allEnded  bool // a tee's trace its Stop ended: every B has its E, every b its e (see tracer.Tee)
	// tornOK: the file may end inside an event: a stream the tracer could
	// not cut back, whose writer failed part-way before the process died
	// (the rest of the event was to come with the next write), or what the
	// reader of a pipe read before it died.
	tornOK bool
	// halfClosed: the file may be the array followed by a "}": a kill
	// between the last two writes that close a plain file (its end, then
	// the object's head over the padding), at Close or when a rotation
	// retires it (guarantees.md).
	halfClosed bool
}

// A fileReport is what checking a file found.
type fileReport struct {
	problems []string
	parsed   bool // it is JSON (once terminated, if it may be cut)
	events   int
	pids     map[int]int // events with an id, per pid
	members  int         // gzip members with data
	gzip     bool
	tracks   int
}

// onID is called for every event with an id: the pid that wrote it, the
// id, and whether it is a B event (which rotation may write again).
type onID func(pid int, id int64, b bool)

func (fr *fileReport) problem(format string, args ...any) {
	if len(fr.problems) < 12 {
		fr.problems = append(fr.problems, fmt.Sprintf(format, args...))
	} else if len(fr.problems) == 12 {
		fr.problems = append(fr.problems, "(more problems left out)")
	}
}

// checkFile reads and checks the trace at path, calling ids for every
// event with an id.
func checkFile(path string, rules fileRules, ids onID) *fileReport {
	fr := &fileReport{pids: map[int]int{}}
	src, err := tracefile.Open(path)
	if err != nil {
		fr.problem("%v", err)
		return fr
	}
	data, err := io.ReadAll(src.Reader())
	src.Close()
	if err != nil {
		fr.problem("reading: %v", err)
		return fr
	}
	fr.gzip, fr.members = src.Gzip, src.Members
	if src.Cut {
		fr.problem("the last gzip member is cut short: a kill or a full disk must leave whole members only")
	}
	if src.GzipErr != nil {
		fr.problem("gzip: %v", src.GzipErr)
	}
	if src.Gzip && rules.mustClose && src.Members > 1 && len(data) <= joinLimit {
		fr.problem("%d gzip members in a closed file: chrome://tracing reads only the first", src.Members)
	}
	if data = checkJSON(data, rules, fr); data != nil {
		fr.parsed = true
		walkEvents(data, rules, fr, ids)
	}
	return fr
}

// checkJSON checks that data is strict JSON, as it is if the file must be
// closed, else after tracefile.Terminate, and returns what was parsed (nil
// if it is not JSON).
func checkJSON(data []byte, rules fileRules, fr *fileReport) []byte {
	if len(data) == 0 {
		fr.problem("the file is empty")
		return nil
	}
	if !bytes.HasPrefix(data, []byte(objectHead)) {
		// A plain file's padding, which Close turns into the object head.
		data = bytes.TrimLeft(data, " ")
		if rules.mustClose && !bytes.HasPrefix(data, []byte("[\n{\"")) {
			fr.problem("a closed trace starts with %q or %q; this one with %.60q", objectHead, "[", data)
		}
	}
	if rules.halfClosed && bytes.HasPrefix(data, []byte("[")) && bytes.HasSuffix(data, []byte("\n]\n}\n")) {
		data = data[:len(data)-len("}\n")]
	}
	if !rules.mustClose {
		var torn bool
		data, torn = tracefile.Terminate(data)
		if torn && !rules.tornOK {
			fr.problem("the file ends inside an event (every write ends on an event boundary): %q", tail(data, 80))
		}
	}
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		what := "not strict JSON"
		if !rules.mustClose {
			what = "not strict JSON once terminated (tracefile.Terminate)"
		}
		fr.problem("%s: %v; starts %.80q, ends %q", what, err, data, tail(data, 80))
		return nil
	}
	if bytes.HasPrefix(data, []byte(objectHead)) {
		var obj struct {
			DisplayTimeUnit string            `json:"displayTimeUnit"`
			TraceEvents     []json.RawMessage `json:"traceEvents"`
		}
		if err := json.Unmarshal(data, &obj); err != nil || obj.DisplayTimeUnit != "ns" || obj.TraceEvents == nil {
			fr.problem("the object form must be {\"displayTimeUnit\":\"ns\",\"traceEvents\":[...]}: %v", err)
		}
	} else if d := bytes.TrimLeft(data, " \n"); len(d) == 0 || d[0] != '[' {
		fr.problem("a trace is an array of events or the object form; this starts %.40q", d)
	}
	return data
}

func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }

// A slice is a span on a track, in nanoseconds; end is forever for a B
// without its E. name indexes the file's names.
type slice struct {
	start, end int64
	name       int32
}

const forever = int64(^uint64(0) >> 1)

// track is one track's state while the events are read.
type track struct {
	open   []slice // B events waiting for their E
	slices []slice
}

// walkEvents reads the events of a parsed trace with the repository's
// scanner and checks each track and the async events.
func walkEvents(data []byte, rules fileRules, fr *fileReport, ids onID) {
	r := tracefile.NewReader(bytes.NewReader(data))
	r.OnProblem = func(p tracefile.Problem) {
		if p.Kind != tracefile.KindMembers {
			fr.problem("line %d: %s: %s", p.Line, p.Kind, p.Msg)
		}
	}
	type tkey struct{ pid, tid int64 }
	tracks := map[tkey]*track{}
	var names []string
	index := map[string]int32{}
	intern := func(s string) int32 {
		i, ok := index[s]
		if !ok {
			i = int32(len(names))
			names = append(names, s)
			index[s] = i
		}
		return i
	}
	type akey struct {
		pid     int64
		cat, id string
	}
	async := map[akey][]string{}
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		fr.events++
		ph := ev.Phase()
		if a := ev.Arg("id"); a != nil && a.IsNum {
			if id, err := strconv.ParseInt(string(a.Value), 10, 64); err == nil && isIDPhase(ph) {
				ids(int(ev.Pid.Int), id, ph == 'B' || ph == 'b') // a new file begins again the spans and async operations open across it
				fr.pids[int(ev.Pid.Int)]++
			}
		}
		k := tkey{ev.Pid.Int, ev.Tid.Int}
		switch ph {
		case 'X', 'B', 'E':
			t := tracks[k]
			if t == nil {
				t = &track{}
				tracks[k] = t
			}
			name := ev.Name.String()
			n := intern(name)
			switch ph {
			case 'X':
				if ev.Dur < 0 {
					fr.problem("line %d: X %q on track %d lasts less than nothing", ev.Line, name, k.tid)
				}
				t.slices = append(t.slices, slice{ev.TS, ev.TS + ev.Dur, n})
			case 'B':
				t.open = append(t.open, slice{ev.TS, forever, n})
			case 'E':
				if len(t.open) == 0 {
					fr.problem("line %d: E %q on track %d without a B before it", ev.Line, name, k.tid)
					continue
				}
				b := t.open[len(t.open)-1]
				t.open = t.open[:len(t.open)-1]
				if b.name != n {
					fr.problem("line %d: E %q on track %d ends B %q", ev.Line, name, k.tid, names[b.name])
				}
				if ev.TS < b.start {
					fr.problem("line %d: E %q on track %d before its B", ev.Line, name, k.tid)
				}
				b.end = ev.TS
				t.slices = append(t.slices, b)
			}
		case 'b', 'e':
			if !rules.asyncPair {
				continue
			}
			ak := akey{ev.Pid.Int, ev.Cat.String(), string(ev.ID)}
			if ph == 'b' {
				async[ak] = append(async[ak], ev.Name.String())
			} else if st := async[ak]; len(st) == 0 {
				fr.problem("line %d: async e %q (id %s) without its b", ev.Line, ev.Name.String(), ev.ID)
			} else {
				async[ak] = st[:len(st)-1]
			}
		}
	}
	fr.tracks = len(tracks)
	if rules.allEnded {
		for ak, st := range async {
			if len(st) > 0 {
				fr.problem("async %q (id %s) still open at the tee's end, which ends it", st[len(st)-1], ak.id)
			}
		}
	}
	for k, t := range tracks {
		if rules.allEnded && len(t.open) > 0 {
			fr.problem("track %d (pid %d): B %q still open at the tee's end, which ends it", k.tid, k.pid, names[t.open[len(t.open)-1].name])
		}
		t.slices = append(t.slices, t.open...)
		if p := nesting(t.slices, names); p != "" {
			fr.problem("track %d (pid %d): %s", k.tid, k.pid, p)
		}
	}
}

// isIDPhase reports whether an event of phase ph carries the id of a
// recorded event: the start of something, never an end.
func isIDPhase(ph byte) bool {
	switch ph {
	case 'X', 'B', 'i', 'I', 'C', 'b', 'n', 's':
		return true
	}
	return false
}

// nesting checks that the slices of one track nest without overlapping,
// as both viewers need to draw them on one track; it returns the first
// overlap, or "". Times are whole nanoseconds in the file; a slice may
// pass its parent's end by one, from rounding ts and dur apart.
func nesting(ss []slice, names []string) string {
	sort.Slice(ss, func(i, j int) bool {
		if ss[i].start != ss[j].start {
			return ss[i].start < ss[j].start
		}
		return ss[i].end > ss[j].end
	})
	const tolerance = 1
	var stack []slice
	for _, s := range ss {
		for len(stack) > 0 && stack[len(stack)-1].end <= s.start+tolerance {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			if top := stack[len(stack)-1]; top.end != forever && s.end > top.end+tolerance {
				return fmt.Sprintf("%q [%s, %s] overlaps %q [%s, %s]", names[s.name], micros(s.start), micros(s.end), names[top.name], micros(top.start), micros(top.end))
			}
		}
		stack = append(stack, s)
	}
	return ""
}

func micros(ns int64) string {
	if ns == forever {
		return "open"
	}
	return string(tracefile.AppendMicros(nil, ns))
}
