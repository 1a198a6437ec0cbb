package main

import (
	"bytes"
	"fmt"
	"io"
	"math"

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
	c := &cutter{
		from: int64(*from), to: int64(*to), pid: *pid, tid: *tid,
		name: []byte(*name), cat: []byte(*cat),
		open: map[string][]pendingSpan{}, async: map[string]pendingSpan{},
		flows: map[string]bool{}, counters: map[string]pendingSpan{},
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
	c.finish()
	if err := o.Close(); err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintf(stderr, "%s: wrote %d events to %s (%d spans clipped to the window)\n", path, o.events, *out, c.clipped)
	}
	return nil
}

// A cutter writes the events of a time window of a trace, and of the
// processes, threads, names and categories asked for, as it reads them.
// Spans that cross the window's edges are clipped to it: a window keeps
// nesting, since two nested spans clipped to one window are still nested.
// B/E pairs and async b/e pairs are written when they end, clipped, so it
// holds the spans still open, and nothing else in proportion to the file.
type cutter struct {
	from, to  int64 // ns from ts 0
	pid, tid  int64 // -1: any
	name, cat []byte
	out       *output
	maxTS     int64
	clipped   int

	open     map[string][]pendingSpan // per track, the B events yet to end
	async    map[string]pendingSpan   // per async operation, its b event
	flows    map[string]bool          // flows begun in the window
	counters map[string]pendingSpan   // per series, its last value before the window
}

// A pendingSpan is a copy of an event whose end, or whose place in the
// output, is yet to come.
type pendingSpan struct {
	raw         []byte
	ts          int64
	tsSpan      tracefile.Span
	keep        bool // it passes the name and category filters
	ph          byte
	name, catID string
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
	if named && len(c.name) > 0 && !bytes.Equal(ev.Name.Raw, c.name) {
		return false
	}
	if named && len(c.cat) > 0 && !bytes.Equal(ev.Cat.Raw, c.cat) {
		return false
	}
	return true
}

// event takes one event of the input.
func (c *cutter) event(ev *tracefile.Event) {
	if ev.HasTS {
		end := ev.TS
		if ev.HasDur {
			end += ev.Dur
		}
		c.maxTS = max(c.maxTS, end)
	}
	track := string(ev.Pid.Raw) + "\x00" + string(ev.Tid.Raw)
	switch ph := ev.Phase(); ph {
	case 'M':
		if c.passes(ev, false) && (c.tid < 0 || ev.Tid.Kind != tracefile.NumInt || ev.Tid.Int == c.tid || ev.Tid.Int == 0) {
			c.out.event(ev.Raw) // the names and order of the tracks
		}
	case 'X':
		if c.passes(ev, true) {
			c.span(ev.Raw, ev.TS, ev.TS+ev.Dur, ev.TSSpan, ev.DurSpan, 'X')
		}
	case 'B':
		c.open[track] = append(c.open[track], pendingSpan{raw: bytes.Clone(ev.Raw), ts: ev.TS, tsSpan: ev.TSSpan, keep: c.passes(ev, true), ph: 'B'})
	case 'E':
		s := c.open[track]
		if len(s) == 0 {
			return
		}
		b := s[len(s)-1]
		c.open[track] = s[:len(s)-1]
		if b.keep {
			c.span(b.raw, b.ts, ev.TS, b.tsSpan, tracefile.Span{}, 'B')
		}
	case 'b':
		k := string(ev.Pid.Raw) + "\x00" + string(ev.Cat.Raw) + "\x00" + string(ev.ID) + "\x00" + string(ev.Name.Raw)
		c.async[k] = pendingSpan{raw: bytes.Clone(ev.Raw), ts: ev.TS, tsSpan: ev.TSSpan, keep: c.passes(ev, true), ph: 'b'}
	case 'e':
		k := string(ev.Pid.Raw) + "\x00" + string(ev.Cat.Raw) + "\x00" + string(ev.ID) + "\x00" + string(ev.Name.Raw)
		b, ok := c.async[k]
		if !ok {
			return
		}
		delete(c.async, k)
		if b.keep && b.ts <= c.to && ev.TS >= c.from {
			c.out.event(c.retime(b.raw, b.tsSpan, max(b.ts, c.from)))
			c.out.event(c.retime(ev.Raw, ev.TSSpan, min(ev.TS, c.to)))
		}
	case 'C':
		if !c.passes(ev, false) {
			return
		}
		switch {
		case ev.TS < c.from:
			k := string(ev.Pid.Raw) + "\x00" + string(ev.Name.Raw) + "\x00" + string(ev.ID)
			if p, ok := c.counters[k]; !ok || p.ts <= ev.TS {
				c.counters[k] = pendingSpan{raw: bytes.Clone(ev.Raw), ts: ev.TS, tsSpan: ev.TSSpan}
			}
		case ev.TS <= c.to:
			c.out.event(ev.Raw)
		}
	case 's', 't', 'f':
		if !c.passes(ev, true) || ev.TS < c.from || ev.TS > c.to {
			return
		}
		id := string(ev.Cat.Raw) + "\x00" + string(ev.ID)
		if ph == 's' {
			c.flows[id] = true
		} else if !c.flows[id] {
			return // its start is outside the window: no arrow to draw
		}
		if ph == 'f' {
			delete(c.flows, id)
		}
		c.out.event(ev.Raw)
	default: // instants, async steps, anything at one time
		if !ev.HasTS || (c.passes(ev, true) && ev.TS >= c.from && ev.TS <= c.to) {
			c.out.event(ev.Raw)
		}
	}
}

// span writes the span [start, end) that raw begins, clipped to the
// window, as an X event, if it overlaps it. ph is its phase in raw.
func (c *cutter) span(raw []byte, start, end int64, tsSpan, durSpan tracefile.Span, ph byte) {
	if end < c.from || start > c.to || end == c.from && start < c.from || !tsSpan.Valid() {
		return // outside, or touching the window's start only
	}
	s, e := max(start, c.from), min(end, c.to)
	if s != start || e != end {
		c.clipped++
	}
	edits := []edit{{tsSpan, tracefile.AppendMicros(nil, s)}}
	dur := tracefile.AppendMicros(nil, e-s)
	if ph == 'X' && durSpan.Valid() {
		edits = append(edits, edit{durSpan, dur})
	} else {
		// A B event becomes an X: its phase, and a dur after its ts.
		i := bytes.Index(raw, []byte(`"ph":"B"`))
		if i < 0 {
			return
		}
		edits = append(edits, edit{tracefile.Span{Start: i, End: i + len(`"ph":"B"`)}, []byte(`"ph":"X"`)})
		edits = append(edits, edit{tracefile.Span{Start: tsSpan.End, End: tsSpan.End}, append([]byte(`,"dur":`), dur...)})
	}
	c.out.event(applyEdits(nil, raw, edits))
}

// retime returns raw with its ts set to ts.
func (c *cutter) retime(raw []byte, tsSpan tracefile.Span, ts int64) []byte {
	if !tsSpan.Valid() {
		return raw
	}
	return applyEdits(nil, raw, []edit{{tsSpan, tracefile.AppendMicros(nil, ts)}})
}

// finish writes what waits for the end of the input: the spans still
// open, as lasting to the end of the window or of the trace, the async
// slices never ended likewise, and each counter's value at the start of
// the window.
func (c *cutter) finish() {
	end := min(c.to, c.maxTS)
	for _, s := range c.open {
		for _, b := range s {
			if b.keep {
				c.span(b.raw, b.ts, end, b.tsSpan, tracefile.Span{}, 'B')
			}
		}
	}
	for _, b := range c.async {
		if b.keep && b.ts <= end {
			c.out.event(c.retime(b.raw, b.tsSpan, max(b.ts, c.from)))
		}
	}
	for _, p := range c.counters {
		c.out.event(c.retime(p.raw, p.tsSpan, c.from))
	}
}
