package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gotracer/tracer/cmd/tracer/internal/chunk"
	"github.com/gotracer/tracer/internal/tracefile"
)

// runCut is "tracer cut".
func runCut(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("cut", "[-from D] [-to D] [-pid N] [-tid N] [-name NAME] [-cat CAT] -o OUT [-q] FILE", stderr)
	from := fs.Duration("from", 0, "the window's start, as a duration from ts 0 (12s, 1m30s)")
	to := fs.Duration("to", 0, "the window's end, as a duration from ts 0 (default: the end of the trace)")
	pid := fs.Int64("pid", -1, "keep only the events of process `N`")
	tid := fs.Int64("tid", -1, "keep only the events of thread (goroutine) `N`")
	name := fs.String("name", "", "keep only the spans, instants and async slices named `NAME`")
	cat := fs.String("cat", "", "keep only the events of category `CAT`")
	out := fs.String("o", "", "write the cut to `OUT` (.gz: gzipped; - for standard output)")
	quiet := fs.Bool("q", false, "no progress bar and no report")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() != 1:
		return usageError{"cut takes one file"}
	case *out == "":
		return usageError{"-o OUT is required"}
	case *to != 0 && *to <= *from:
		return usageError{fmt.Sprintf("-to %v is not after -from %v", *to, *from)}
	}
	if err := noURL("-o", *out); err != nil {
		return err
	}
	c := &cutter{
		from: int64(*from), to: int64(*to), pid: *pid, tid: *tid,
		name: *name, cat: *cat,
		open: map[string]*chunk.Stack[pendingSpan]{}, names: map[string]string{}, flows: map[string]*cutFlow{},
		counters: map[string]pendingSpan{},
	}
	if *to == 0 {
		c.to = math.MaxInt64
	}
	path := fs.Arg(0)
	in, err := openInput(path, *quiet, func(tracefile.Problem) {})
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := createOutput(*out, isGzipName(*out), stdout)
	if err != nil {
		return err
	}
	c.out = o
	if err := in.each(func(ev *tracefile.Event) error { c.event(ev); return o.err }); err != nil {
		o.Abort()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := in.errNotTrace(); err != nil {
		o.Abort()
		return fmt.Errorf("%w: nothing to cut", err)
	}
	if c.hasTS && c.from > c.maxTS {
		o.Abort()
		return fmt.Errorf("%s: the window starts at %s, after the trace's last time (%s from ts 0): nothing to cut", path, time.Duration(c.from), time.Duration(c.maxTS))
	}
	c.finish()
	if err := o.Close(); err != nil {
		return err
	}
	if !*quiet {
		cut := ""
		if in.fetch != nil && in.fetch.wasCut() {
			cut = "; " + in.fetch.cutNote()
		}
		fmt.Fprintf(stderr, "%s: wrote %d events to %s (%d spans clipped to the window)%s\n", path, o.events, *out, c.clipped, cut)
	}
	return nil
}

// A cutter writes the events of a time window of a trace, and of the
// processes, threads, names and categories asked for, as it reads them.
// Spans that cross the window's edges are clipped to it.
//
// B/E pairs (and async b/e pairs) that begin in the window stay B/E
// pairs, in the file's order, so that they nest, and flows bind to them,
// as in the original; an E after the window's end is clipped to it. A
// span clipped at the window's start (an X, or a B/E pair, which becomes
// an X) is held to the end, with those clipped at its end, and they are
// written outer first: Perfetto sorts the events of one ts X events
// first, the longer first, then in file order, so two spans clipped to
// one start would otherwise nest as the file ordered them (inner first,
// where spans are written as they end). It so holds the spans still open
// and those across the edges of the window, and nothing else in
// proportion to the file.
type cutter struct {
	from, to  int64 // ns from ts 0
	pid, tid  int64 // -1: any
	name, cat string
	out       *output
	maxTS     int64
	hasTS     bool
	clipped   int
	seq       int64

	open     map[string]*chunk.Stack[pendingSpan] // per track (or async id), the B (b) events yet to end
	spare    []*chunk.Stack[pendingSpan]          // emptied, for the next track or id to open one
	names    map[string]string                    // the names of B (b) events, each held once
	key      []byte                               // the track of the event being read
	nameBuf  []byte                               // its name, decoded
	flows    map[string]*cutFlow                  // per flow id
	counters map[string]pendingSpan               // per series, its last value before the window
	held     []heldSpan                           // spans clipped, written at the end
}

// A pendingSpan is a copy of an event whose end, or whose place in the
// output, is yet to come.
type pendingSpan struct {
	raw     []byte
	ts      int64
	tsSpan  tracefile.Span
	durSpan tracefile.Span
	phSpan  tracefile.Span
	ph      byte
	name    string
	seq     int64
	keep    bool // it passes the filters and begins before the window's end
	written bool // its B is in the output
}

// A heldSpan is a span clipped to the window, to be written at the end:
// an X event, or an async b and its e.
type heldSpan struct {
	track      string
	start, end int64 // clipped
	s0, e0     int64 // as in the file
	x          bool  // an X in the file
	seq        int64
	raw, end2  []byte // the X, or the b and its e
}

// A cutFlow is what a cutter knows of a flow (s, t and f events of one
// id): the last of its events before the window, which it writes at the
// window's start if the flow goes on in the window, and whether it wrote
// any of its events (then the first after the window is written at the
// window's end).
type cutFlow struct {
	before  []byte
	tsSpan  tracefile.Span
	written bool
	after   bool // its first event after the window is written
}

// passes reports whether ev belongs to the processes and threads asked
// for, and, for what has a name, to the names and categories.
func (c *cutter) passes(ev *tracefile.Event, named bool) bool {
	if c.pid >= 0 && (ev.Pid.Kind != tracefile.NumInt || ev.Pid.Int != c.pid) {
		return false
	}
	if c.tid >= 0 && ev.Phase() != 'M' && ev.Phase() != 'C' && (ev.Tid.Kind != tracefile.NumInt || ev.Tid.Int != c.tid) {
		return false
	}
	if named && c.name != "" && ev.Name.String() != c.name {
		return false
	}
	if named && c.cat != "" && ev.Cat.String() != c.cat {
		return false
	}
	return true
}

// event takes one event of the input.
func (c *cutter) event(ev *tracefile.Event) {
	c.seq++
	if ev.HasTS {
		end := ev.TS
		if ev.HasDur && ev.Phase() == 'X' && ev.Dur > 0 {
			end += ev.Dur
		}
		if !c.hasTS || end > c.maxTS {
			c.maxTS = end
		}
		c.hasTS = true
	}
	// The track's key, and the name of a B or E, are built in buffers the
	// cutter reuses: a map is indexed by them without a copy, which is
	// made only for what is kept.
	c.key = append(append(append(c.key[:0], ev.Pid.Raw...), 0), ev.Tid.Raw...)
	switch ph := ev.Phase(); ph {
	case 'M':
		if c.passes(ev, false) && (c.tid < 0 || ev.Tid.Kind != tracefile.NumInt || ev.Tid.Int == c.tid || ev.Tid.Int == 0) {
			c.out.event(ev.Raw) // the names and order of the tracks
		}
	case 'X':
		if c.passes(ev, true) && ev.HasTS && ev.HasDur && ev.Dur >= 0 {
			c.x(c.key, ev)
		}
	case 'B':
		c.begin(c.key, ev)
	case 'E':
		c.nameBuf = ev.Name.Append(c.nameBuf[:0])
		c.end(c.key, ev, c.nameBuf)
	case 'b':
		c.begin(c.asyncKey(ev), ev)
	case 'e':
		c.nameBuf = ev.Name.Append(c.nameBuf[:0])
		c.end(c.asyncKey(ev), ev, c.nameBuf)
	case 'C':
		if !c.passes(ev, false) || !ev.HasTS {
			return
		}
		switch {
		case ev.TS < c.from:
			k := string(ev.Pid.Raw) + "\x00" + ev.Name.String() + "\x00" + string(ev.ID)
			if p, ok := c.counters[k]; !ok || p.ts <= ev.TS {
				c.counters[k] = pendingSpan{raw: bytes.Clone(ev.Raw), ts: ev.TS, tsSpan: ev.TSSpan}
			}
		case ev.TS <= c.to:
			c.out.event(ev.Raw)
		}
	case 's', 't', 'f':
		if c.passes(ev, true) && ev.HasTS {
			c.flow(ev)
		}
	default: // instants, async steps, anything at one time
		switch {
		case !ev.HasTS:
			c.out.event(ev.Raw)
		case !c.passes(ev, true) || ev.TS < c.from || !c.before(ev.TS):
		case ev.TS == c.from && (ph == 'i' || ph == 'I' || ph == 'R'):
			// An instant of a thread is a slice of no duration, which
			// may tie with a span clipped to the window's start.
			c.held = append(c.held, heldSpan{track: string(c.key), start: ev.TS, end: ev.TS, s0: ev.TS, e0: ev.TS, seq: c.seq, raw: bytes.Clone(ev.Raw)})
		default:
			c.out.event(ev.Raw)
		}
	}
}

// asyncKey returns the track of an async event: its process, category
// and id, as the viewers pair b and e (in c.key).
func (c *cutter) asyncKey(ev *tracefile.Event) []byte {
	k := append(append(c.key[:0], "async\x00"...), ev.Pid.Raw...)
	k = append(ev.Cat.Append(append(k, 0)), 0)
	c.key = append(append(append(k, ev.Scope.Raw...), 0), ev.ID...)
	return c.key
}

// inWindow reports whether the slice [start, end] shows in the window
// [from, to): it overlaps it, beyond touching its start; one of no
// duration is in if it is at or after the start and before the end.
func (c *cutter) inWindow(start, end int64) bool {
	if start == end {
		return start >= c.from && c.before(start)
	}
	return end > c.from && c.before(start)
}

// before reports whether ts is before the window's end (always, for a
// window to the end of the trace).
func (c *cutter) before(ts int64) bool { return ts < c.to || c.to == math.MaxInt64 }

// x writes the X event ev, clipped to the window, if it shows in it.
func (c *cutter) x(track []byte, ev *tracefile.Event) {
	start, end := ev.TS, ev.TS+ev.Dur
	if !c.inWindow(start, end) || !ev.TSSpan.Valid() || !ev.DurSpan.Valid() {
		return
	}
	s, e := max(start, c.from), min(end, c.to)
	if s == start && e == end && s != c.from && e != c.to {
		c.out.event(ev.Raw)
		return
	}
	// Clipped, or at an edge, where one clipped may tie with it.
	raw := ev.Raw
	if s == start && e == end {
		raw = bytes.Clone(raw)
	} else {
		c.clipped++
		raw = applyEdits(nil, ev.Raw, []edit{{ev.TSSpan, tracefile.AppendMicros(nil, s)}, {ev.DurSpan, tracefile.AppendMicros(nil, e-s)}})
	}
	c.held = append(c.held, heldSpan{track: string(track), start: s, end: e, s0: start, e0: end, x: true, seq: c.seq, raw: raw})
}

// begin follows a B or b event on track k: one in the window is written
// now, one before it when it ends.
func (c *cutter) begin(k []byte, ev *tracefile.Event) {
	p := pendingSpan{ts: ev.TS, tsSpan: ev.TSSpan, durSpan: ev.DurSpan, phSpan: ev.PhSpan,
		ph: ev.Phase(), name: c.intern(ev.Name), seq: c.seq}
	// One that begins at the window's end or after has nothing in it
	// (unless it lasts nothing, which its E alone tells): it is left
	// out, and its E with it.
	p.keep = c.passes(ev, true) && ev.HasTS && ev.TSSpan.Valid() && c.before(ev.TS)
	if p.keep && ev.TS >= c.from {
		p.written = true
		c.out.event(ev.Raw)
	}
	if !p.written || c.to != math.MaxInt64 {
		p.raw = bytes.Clone(ev.Raw) // to clip it, or end it at the window's end
	}
	st := c.open[string(k)]
	if st == nil {
		if n := len(c.spare); n > 0 {
			st, c.spare = c.spare[n-1], c.spare[:n-1]
		} else {
			st = new(chunk.Stack[pendingSpan])
		}
		c.open[string(k)] = st
	}
	st.Push(p)
}

// intern returns name decoded, as a string held once for every B of that
// name while there are not too many names to hold.
func (c *cutter) intern(name tracefile.Str) string {
	c.nameBuf = name.Append(c.nameBuf[:0])
	if s, ok := c.names[string(c.nameBuf)]; ok {
		return s
	}
	s := string(c.nameBuf)
	if len(c.names) < 1<<16 {
		c.names[s] = s
	}
	return s
}

// end follows an E or e event on track k: it ends the innermost open
// span (of its name, if name is set).
func (c *cutter) end(k []byte, ev *tracefile.Event, name []byte) {
	st := c.open[string(k)]
	if st == nil {
		return
	}
	i := st.Len() - 1
	for len(name) > 0 && i >= 0 && st.At(i).name != string(name) {
		i--
	}
	if i < 0 {
		return
	}
	p := *st.At(i)
	if st.Remove(i); st.Len() == 0 {
		delete(c.open, string(k))
		c.spare = append(c.spare, st)
	}
	switch {
	case !p.keep || !ev.HasTS:
	case p.written && ev.TS > c.to:
		c.clipped++
		c.out.event(c.retime(ev.Raw, ev.TSSpan, c.to))
	case p.written:
		c.out.event(ev.Raw)
	case ev.TS > c.from:
		c.hold(string(k), p, ev.TS, ev)
	}
}

// hold keeps the span p, begun before the window and ended at end (by
// the E or e event ev, nil if it never ended), clipped to the window, to
// be written at the end.
func (c *cutter) hold(k string, p pendingSpan, end int64, ev *tracefile.Event) {
	c.clipped++
	e := min(end, c.to)
	h := heldSpan{track: k, start: c.from, end: e, s0: p.ts, e0: end, seq: p.seq}
	if p.ph == 'b' {
		h.raw = c.retime(p.raw, p.tsSpan, c.from)
		if ev != nil {
			h.end2 = c.retime(ev.Raw, ev.TSSpan, e)
		} else {
			h.end2 = endOf(p, e)
		}
	} else {
		// A B/E pair becomes an X, which Perfetto sorts before the B
		// events of its ts, and nests by duration.
		edits := []edit{{p.phSpan, []byte(`"X"`)}, {p.tsSpan, tracefile.AppendMicros(nil, c.from)}}
		dur := tracefile.AppendMicros(nil, e-c.from)
		if p.durSpan.Valid() {
			edits = append(edits, edit{p.durSpan, dur}) // Node.js writes "dur":0 on B
		} else {
			edits = append(edits, edit{tracefile.Span{Start: p.tsSpan.End, End: p.tsSpan.End}, append([]byte(`,"dur":`), dur...)})
		}
		h.raw = applyEdits(nil, p.raw, edits)
	}
	c.held = append(c.held, h)
}

// flow follows an s, t or f event. One in the window is written; the
// last of its flow before the window is written at the window's start,
// and the first after it at its end (a nanosecond before), so that an
// arrow from or to a slice across an edge of the window is kept.
func (c *cutter) flow(ev *tracefile.Event) {
	id := ev.Cat.String() + "\x00" + ev.Name.String() + "\x00" + string(ev.ID)
	f := c.flows[id]
	if f == nil {
		if ev.Phase() == 'f' || ev.TS > c.to {
			return // nothing of it before: no arrow to keep
		}
		f = &cutFlow{}
		c.flows[id] = f
	}
	switch {
	case ev.TS < c.from:
		f.before, f.tsSpan = bytes.Clone(ev.Raw), ev.TSSpan
	case ev.TS <= c.to:
		if f.before != nil && ev.Phase() != 's' {
			c.out.event(c.retime(f.before, f.tsSpan, c.from))
		}
		f.before = nil
		f.written = true
		c.out.event(ev.Raw)
	default:
		if f.written && !f.after {
			// A nanosecond before the window's end, inside the slices
			// clipped to it: catapult binds an end to a slice whose start
			// plus duration, added in floating point, is not below its ts,
			// and that sum can fall a hair short of the edge.
			f.after = true
			c.out.event(c.retime(ev.Raw, ev.TSSpan, c.to-1))
		}
	}
	if ev.Phase() == 'f' || ev.TS > c.to {
		delete(c.flows, id)
	}
}

// retime returns raw with its ts set to ts.
func (c *cutter) retime(raw []byte, tsSpan tracefile.Span, ts int64) []byte {
	if !tsSpan.Valid() {
		return raw
	}
	return applyEdits(nil, raw, []edit{{tsSpan, tracefile.AppendMicros(nil, ts)}})
}

// finish writes what waits for the end of the input: the spans still
// open (across the window's start, clipped to it and to the end of the
// window or of the trace; begun in it, ended by the window's end, if it
// has one), the spans held, outer first, and each counter's value at the
// start of the window.
func (c *cutter) finish() {
	end := min(c.to, c.maxTS)
	for _, k := range slices.Sorted(maps.Keys(c.open)) {
		st := c.open[k]
		for i := st.Len() - 1; i >= 0; i-- {
			p := *st.At(i)
			switch {
			case !p.keep:
			case p.written && c.to != math.MaxInt64:
				c.out.event(endOf(p, c.to))
			case !p.written && end > c.from:
				c.hold(k, p, end, nil)
			}
		}
	}
	// In the order Perfetto takes them in the file (by start; at one
	// start, X events first, the longer first, then B events in file
	// order), which nests them as they nest there.
	slices.SortStableFunc(c.held, func(a, b heldSpan) int {
		if c := cmp.Or(strings.Compare(a.track, b.track), cmp.Compare(a.s0, b.s0)); c != 0 {
			return c
		}
		if a.x != b.x {
			if a.x {
				return -1
			}
			return 1
		}
		if a.x {
			if c := cmp.Compare(b.e0-b.s0, a.e0-a.s0); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for _, h := range c.held {
		c.out.event(h.raw)
	}
	for i := len(c.held) - 1; i >= 0; i-- {
		if h := c.held[i]; h.end2 != nil {
			c.out.event(h.end2) // the e events of async slices, inner first
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.counters)) {
		p := c.counters[k]
		c.out.event(c.retime(p.raw, p.tsSpan, c.from))
	}
}

// endOf returns the E (or e) event that ends the open span p at ts.
func endOf(p pendingSpan, ts int64) []byte {
	var ev struct {
		Name  *string         `json:"name,omitempty"`
		Cat   *string         `json:"cat,omitempty"`
		Ph    string          `json:"ph"`
		Pid   json.RawMessage `json:"pid,omitempty"`
		Tid   json.RawMessage `json:"tid,omitempty"`
		ID    json.RawMessage `json:"id,omitempty"`
		ID2   json.RawMessage `json:"id2,omitempty"`
		Scope *string         `json:"scope,omitempty"`
	}
	_ = json.Unmarshal(p.raw, &ev) // it was read as JSON
	if ev.Ph == "b" {
		ev.Ph = "e"
	} else {
		ev.Ph = "E"
	}
	b, _ := json.Marshal(ev)
	b = b[:len(b)-1]
	b = append(b, `,"ts":`...)
	b = tracefile.AppendMicros(b, ts)
	return append(b, '}')
}
