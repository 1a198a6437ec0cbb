package tables

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/gotracer/tracer/internal/traceparent"
)

// Flows.
//
// A flow event (s, t, f: the tracer package's FlowBegin, Step and End)
// binds to the innermost slice of its thread open at its ts, or, for an
// f without "bp":"e", the next slice to begin on the thread; the flow
// table holds an arrow from each bound event's slice to the next one's.
// A flow event waits on its track until the slice around it is written
// (see forest.go); the events of one flow are matched by category, name
// and id, as trace_processor does for these events.

// A flowChain is the events of one flow, in file order.
type flowChain struct {
	key       string // in Builder.flows, while it is there
	name, cat string
	points    []*flowPoint
	waiting   int  // points not bound yet
	ended     bool // an f came
}

// A flowPoint is one flow event.
type flowPoint struct {
	chain *flowChain
	ts    int64
	next  bool  // binds to the next slice, not the enclosing one
	slice int64 // the slice it is bound to, 0 before
}

// flowEvent follows an s, t or f event.
func (b *Builder) flowEvent(e *tracefile.Event, ph byte, ts int64) error {
	if e.ID == nil {
		return nil
	}
	t := b.thread(e).t
	k := append(b.key[:0], e.Cat.Raw...)
	k = append(k, 0)
	k = append(k, e.Name.Raw...)
	k = append(k, 0)
	k = append(k, e.ID...)
	b.key = k
	c := b.flows[string(k)]
	if ph == 's' || c == nil || c.ended {
		if c != nil {
			b.retired = append(b.retired, c) // a new flow with its id
		}
		c = &flowChain{key: string(k), name: b.intern(e.Name), cat: b.intern(e.Cat)}
		b.flows[c.key] = c
	}
	p := &flowPoint{chain: c, ts: ts, next: ph == 'f' && string(e.BP.Raw) != "e"}
	c.points = append(c.points, p)
	c.waiting++
	if ph == 'f' {
		c.ended = true
	}
	if ts < t.maxEnd {
		// The slices of its time were written (see late.go).
		switch id, r := t.recall(ts, p.next); r {
		case bound:
			return b.bindSlice(p, id)
		case unbound:
			return b.unbound(p)
		case unsure:
			b.Report.LateFlows++
		}
	}
	at := sort.Search(len(t.points), func(i int) bool { return t.points[i].ts > ts })
	t.points = slices.Insert(t.points, at, p)
	if p.next {
		t.nexts++
	}
	b.wait(t)
	return nil
}

// bindFlows binds the flow events of t that come before the end of the
// root r, about to be written, as trace_processor does: to the slice on
// top of the thread's slice stack at the event, which still holds a
// slice that ended until another slice event of the thread comes (a
// zero-length slice at its ts, or the last of the slices before it), but
// not a B/E pair, which its E pops; an f without "bp":"e" to the next
// slice to begin after it. Those before r and after the root written
// before it bind to what that root left on the stack (t.stale), or to
// the B open around them (see gapTop).
// t.points is sorted by ts, so this costs the points bound, not all those
// waiting.
func (b *Builder) bindFlows(t *track, r *node) error {
	pts := t.points
	keep := pts[:0]
	for i, p := range pts {
		switch {
		case p.ts > r.end || p.ts == r.end && r.end > r.row.TS:
			// After r: for the roots to come.
			keep = append(keep, pts[i:]...)
			clear(pts[len(keep):])
			t.points = keep
			return nil
		case p.ts < r.row.TS:
			if p.next {
				t.nexts--
				n := r
				if o := t.nextOpen(p.ts, r.row.TS); o != nil {
					n = o
				}
				if err := b.bind(p, n); err != nil {
					return err
				}
			} else if id, _ := t.gapTop(p.ts, t.staled, t.stale); id != 0 {
				if err := b.bindID(p, id); err != nil {
					return err
				}
			} else if err := b.unbound(p); err != nil {
				return err
			}
		case p.next:
			if n := nextAfter(r, p.ts); n != nil {
				t.nexts--
				if err := b.bind(p, n); err != nil {
					return err
				}
			} else {
				keep = append(keep, p) // the next root's
			}
		default:
			if err := b.bindID(p, t.topAt(r, p.ts)); err != nil {
				return err
			}
		}
	}
	clear(pts[len(keep):])
	t.points = keep
	return nil
}

// topAt returns the id of the slice of r's subtree on top of
// trace_processor's stack at ts, in r: the last slice begun at or before
// ts, going down, but not into a B/E pair that ended before ts; in a B
// whose first children were written while it was open, and ended
// before ts, what they left on top. Children are in start order: found
// by a binary search, as a slice may have thousands (a Chromium
// task's).
func (t *track) topAt(r *node, ts int64) int64 {
	n := r
	for {
		i := sort.Search(len(n.children), func(i int) bool { return n.children[i].row.TS > ts })
		if i == 0 {
			if id := t.lastTop[n.row.ID]; n.anchored && id != 0 {
				return id
			}
			return n.row.ID
		}
		c := n.children[i-1]
		if c.be && c.end < ts {
			return n.row.ID
		}
		n = c
	}
}

// nextAfter returns the first slice of r's subtree, in start order, that
// begins after ts, or nil.
func nextAfter(r *node, ts int64) *node {
	if r.row.TS > ts {
		return r
	}
	for _, c := range r.children {
		if c.end < ts && c.row.TS <= ts {
			continue
		}
		if n := nextAfter(c, ts); n != nil {
			return n
		}
	}
	return nil
}

// staleTop returns the id of the slice r leaves on top of
// trace_processor's stack once it ended: its last slice, going down the
// last children, but none of a B/E pair (its E pops it).
func staleTop(r *node) int64 {
	if r.be {
		return 0
	}
	n := r
	for len(n.children) > 0 {
		c := n.children[len(n.children)-1]
		if c.be {
			break
		}
		n = c
	}
	return n.row.ID
}

// bindID binds p to the slice with the id id, written already.
func (b *Builder) bindID(p *flowPoint, id int64) error {
	return b.bindSlice(p, id)
}

// unbound notes that p binds to no slice (flow_no_enclosing_slice).
func (b *Builder) unbound(p *flowPoint) error {
	b.Report.UnboundFlows++
	return b.bindSlice(p, 0)
}

// bind binds p to the slice n, and writes its flow's arrows once all of
// its events are bound.
func (b *Builder) bind(p *flowPoint, n *node) error {
	return b.bindSlice(p, n.row.ID)
}

// bindSlice binds p to the slice with the id id.
func (b *Builder) bindSlice(p *flowPoint, id int64) error {
	p.slice = id
	c := p.chain
	c.waiting--
	if c.ended && c.waiting == 0 {
		// Complete: written now, to keep memory per open flow.
		if err := b.flushChain(c); err != nil {
			return err
		}
		if b.flows[c.key] == c {
			delete(b.flows, c.key)
		}
		c.points = nil
	}
	return nil
}

// flushChain writes the arrows of c between its bound events.
func (b *Builder) flushChain(c *flowChain) error {
	var prev *flowPoint
	for _, p := range c.points {
		if p.slice == 0 {
			continue
		}
		if prev != nil {
			b.nextFlow++
			f := Flow{ID: b.nextFlow, SliceOut: prev.slice, SliceIn: p.slice, Name: c.name, Category: c.cat}
			if err := b.sink.Flow(&f); err != nil {
				return err
			}
		}
		prev = p
	}
	return nil
}

// Flows of the second form.
//
// A slice (an X or B event, an async b or n) may carry "bind_id" with
// "flow_out":true, "flow_in":true or both (the format's flow events,
// version 2, which tracer merge writes between processes). trace_processor
// takes them as it takes the events, sorted by ts (at one ts, X events
// the longer first, then the others, in file order), and binds them to
// the slice itself: a flow_out starts the flow of its id (a second one
// is ignored, flow_duplicate_id), a flow_in draws an arrow from the slice
// that started it (each flow_in one; none before the flow_out,
// flow_end_without_start), and a slice with both draws one and starts
// the flow anew from itself (none before a flow_out). The id is the
// number, or a string of hex digits ("0x1f" or "1f"); flow_in and
// flow_out count only when they are true, the JSON literal. They are
// kept for the group, in its order, and bound at its end: 48 bytes per
// slice that carries one.

// A bindPoint is a slice with a bind_id.
type bindPoint struct {
	id      uint64
	ts, dur int64 // the slice's; dur 0 for all but an X, as trace_processor sorts them
	seq     int64 // the event's place in the input
	slice   int64
	in, out bool
}

var bindIDKey = []byte(`"bind_id"`)

// bindFlow keeps the bind_id of the slice n made of e, if it has one;
// dur is its duration if it is an X, for the sort.
func (b *Builder) bindFlow(e *tracefile.Event, n *node, dur int64) {
	if !bytes.Contains(e.Raw, bindIDKey) {
		b.linkFlow(e, n, dur)
		return // the usual case: no look further
	}
	var v struct {
		BindID  json.RawMessage `json:"bind_id"`
		FlowIn  json.RawMessage `json:"flow_in"`
		FlowOut json.RawMessage `json:"flow_out"`
	}
	if json.Unmarshal(e.Raw, &v) != nil {
		return
	}
	id, ok := parseBindID(v.BindID)
	in, out := string(v.FlowIn) == "true", string(v.FlowOut) == "true"
	if !ok || !in && !out {
		return // trace_processor: flow_without_direction
	}
	b.binds = append(b.binds, bindPoint{id: id, ts: n.row.TS, dur: dur, seq: b.Report.Events,
		slice: n.row.ID, in: in, out: out})
}

// linkFlow keeps, as a bind_id, the link of an X or B event n made of e
// that carries the traceparent it sent ("traceparent.out", a client's
// span) or received ("traceparent.in", a server's), as tracehttp writes
// them: the flow tracer merge binds between the files of two processes,
// which the tables so hold for the raw files, read together.
func (b *Builder) linkFlow(e *tracefile.Event, n *node, dur int64) {
	if ph := e.Phase(); ph != 'X' && ph != 'B' || len(e.Args) == 0 {
		return
	}
	for _, dir := range [...]string{"traceparent.out", "traceparent.in"} {
		a := e.Arg(dir)
		if a == nil || !a.Str.Set {
			continue
		}
		if _, parent, ok := traceparent.Parse(a.Str.String()); ok {
			out := dir == "traceparent.out"
			b.binds = append(b.binds, bindPoint{id: parent, ts: n.row.TS, dur: dur, seq: b.Report.Events,
				slice: n.row.ID, in: !out, out: out})
		}
		return
	}
}

// parseBindID reads a bind_id as trace_processor does: a number, or a
// string of hex digits with or without 0x.
func parseBindID(raw json.RawMessage) (uint64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
		n, err := strconv.ParseUint(s, 16, 64)
		return n, err == nil
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	return n, err == nil
}

// endBinds writes the arrows of the bind_id flows of every group, which
// may bind the slices of two processes (see linkFlow), at Close.
func (b *Builder) endBinds() error {
	pts := b.binds
	slices.SortStableFunc(pts, func(x, y bindPoint) int {
		return cmp.Or(cmp.Compare(x.ts, y.ts), cmp.Compare(y.dur, x.dur), cmp.Compare(x.seq, y.seq))
	})
	type source struct{ slice, ts int64 }
	started := map[uint64]source{}
	for _, p := range pts {
		from, ok := started[p.id]
		switch {
		case p.out && !p.in:
			if !ok {
				started[p.id] = source{p.slice, p.ts}
			}
			continue
		case !ok:
			continue
		}
		out, in := from.slice, p.slice
		if from.ts > p.ts {
			out, in = in, out
		}
		b.nextFlow++
		f := Flow{ID: b.nextFlow, SliceOut: out, SliceIn: in}
		if err := b.sink.Flow(&f); err != nil {
			return err
		}
		if p.out {
			started[p.id] = source{p.slice, p.ts}
		}
	}
	clear(b.binds)
	b.binds = b.binds[:0]
	return nil
}
