package tables

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
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
// f without "bp":"e", the next slice to begin on the thread. A flow event
// waits on its track until the slice around it is written (see
// forest.go); the events of one flow are matched by category, name and
// id, and its arrows drawn as trace_processor draws them, in the order
// of its sort (by ts, then file order):
//
//   - the first s bound to a slice starts the flow; a later s of the same
//     flow is ignored (flow_duplicate_id), even after an f;
//   - a t draws an arrow from the flow's last slice and makes its own the
//     last;
//   - an f draws one from the last slice and leaves it last: each f of a
//     flow draws one, and a t after them goes on from there;
//   - a t or f before any start draws nothing, nor does one bound to no
//     slice;
//   - an arrow points from the slice that begins first to the other (at
//     one ts, from the last slice): an f in a slice begun before the s's
//     draws its arrow backwards, as trace_processor does; but an f
//     without "bp":"e", taken when the next slice begins, draws from
//     the flow's last slice then to that one.
//
// A flow's events are kept until an f came and all are bound, then its
// arrows are written and only where they leave it kept (flowState, up
// to maxWrittenFlows), for the events of its id to come. Where those
// come before, in time, the last of the events already drawn,
// trace_processor would have drawn them in another order: the tools
// count them (Report.LateFlows).

// A sliceRef is a slice a flow event binds to: its id (0 for none) and
// its ts, which orders the flow's arrows.
type sliceRef struct{ id, ts int64 }

// refOf returns the sliceRef of n.
func refOf(n *node) sliceRef { return sliceRef{n.row.ID, n.row.TS} }

// A flowChain is one flow: its events not written yet, in file order,
// and where those written left it.
type flowChain struct {
	key       string // in Builder.flows
	name, cat string
	points    []*flowPoint
	waiting   int       // points not bound yet
	ended     bool      // an f came since the last written
	state     flowState // what the events written left
}

// A flowPoint is one flow event.
type flowPoint struct {
	chain *flowChain
	ts    int64
	ph    byte     // 's', 't' or 'f'
	next  bool     // binds to the next slice, not the enclosing one
	seq   uint32   // its place among its track's flow events: see Ties
	slice sliceRef // the slice it is bound to, once bound
}

// order returns where p comes in trace_processor's order: at its ts,
// but for an f bound to the next slice, which it takes when that slice
// begins (from the flow's last slice then), before the flow events of
// that ts (rank 0), as a writer writes them.
func (p *flowPoint) order() (ts int64, rank int) {
	if p.next && p.slice.id != 0 {
		return p.slice.ts, 0
	}
	return p.ts, 1
}

// A flowState is where a flow's events written left it: its last slice
// (none, id 0, before it started), and the ts of its last event
// (math.MinInt64 before).
type flowState struct {
	last sliceRef
	ts   int64
}

// maxWrittenFlows bounds the flows kept once all their events are
// written (about 250 bytes each, with their key): past it, they are
// dropped, and a flow whose id comes back starts anew. A var for tests.
var maxWrittenFlows = 1 << 17

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
	if c == nil {
		c = &flowChain{key: string(k), name: b.intern(e.Name), cat: b.intern(e.Cat), state: flowState{ts: math.MinInt64}}
		b.flows[c.key] = c
	} else if len(c.points) == 0 {
		b.writtenFlows-- // written, and back
	}
	t.flowsRead++
	p := &flowPoint{chain: c, ts: ts, ph: ph, seq: t.flowsRead, next: ph == 'f' && string(e.BP.Raw) != "e"}
	c.points = append(c.points, p)
	c.waiting++
	if ph == 'f' {
		c.ended = true
	}
	if ts < t.maxEnd {
		// The slices of its time were written (see late.go).
		switch s, r := t.recall(ts, p.next); r {
		case bound:
			return b.bindSlice(p, s)
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

// Ties.
//
// At one ts, trace_processor's sort takes an X with a duration before
// the other events, and E events first once the file had an X event;
// the rest (a B, an instant, an X of no duration; an E in a file with
// no X so far) it takes in file order with the flow events of that ts.
// So a track counts the flow events read on it (track.flowsRead), a
// flow event keeps its count (flowPoint.seq, from 1), and a slice event
// taken in file order keeps the count when it came (node.tieBegin,
// node.tieEnd; 0 for one taken first): it comes before a flow event of
// its ts if its count is lower (see node.begun, node.popped). Where a
// file's first X comes later in it, out of time order, trace_processor
// sorts the E events before it again: not followed.

// afterAll is the seq of a flow event read after every slice event of
// its ts (a late one).
const afterAll = math.MaxUint32

// bindFlows binds the flow events of t that come before the end of the
// root r, about to be written, as trace_processor does: to the slice on
// top of the thread's slice stack at the event, which still holds a
// slice that ended until another slice event of the thread comes (a
// zero-length slice at its ts, or the last of the slices before it), but
// not a B/E pair, which its E pops (at its ts too: see node.popped); an
// f without "bp":"e" to the next slice to begin after it. Those before r
// and after the root written before it bind to what that root left on
// the stack (t.stale), or to the B open around them (see gapTop).
// t.points is sorted by ts, so this costs the points bound, not all
// those waiting.
func (b *Builder) bindFlows(t *track, r *node) error {
	pts := t.points
	keep := pts[:0]
	for i, p := range pts {
		switch {
		case p.ts > r.end || p.ts == r.end && r.endsBefore(p.ts, p.seq):
			// After r: for the roots to come.
			keep = append(keep, pts[i:]...)
			clear(pts[len(keep):])
			t.points = keep
			return nil
		case !r.begun(p.ts, p.seq):
			if p.next {
				t.nexts--
				n := r
				if o := t.nextOpen(p.ts, r.row.TS, p.seq); o != nil {
					n = o
				}
				if err := b.bind(p, n); err != nil {
					return err
				}
			} else if top, _ := t.gapTop(p.ts, t.staled, t.stale, p.seq); top.id != 0 {
				if err := b.bindSlice(p, top); err != nil {
					return err
				}
			} else if err := b.unbound(p); err != nil {
				return err
			}
		case p.next:
			if n := nextAfter(r, p.ts, p.seq); n != nil {
				t.nexts--
				if err := b.bind(p, n); err != nil {
					return err
				}
			} else {
				keep = append(keep, p) // the next root's
			}
		default:
			if err := b.bindSlice(p, t.topAt(r, p.ts, p.seq)); err != nil {
				return err
			}
		}
	}
	clear(pts[len(keep):])
	t.points = keep
	return nil
}

// topAt returns the slice of r's subtree on top of
// trace_processor's stack at ts, in r: the last slice begun at or before
// ts, going down (node.begun), but not into a B/E pair popped at ts
// (node.popped; seq is the flow event's: see Ties); in a B
// whose first children were written while it was open, and ended
// before ts, what they left on top. Children are in start order: found
// by a binary search, as a slice may have thousands (a Chromium
// task's).
func (t *track) topAt(r *node, ts int64, seq uint32) sliceRef {
	n := r
	for {
		i := sort.Search(len(n.children), func(i int) bool { return n.children[i].row.TS > ts })
		for i > 0 && !n.children[i-1].begun(ts, seq) {
			i--
		}
		if i == 0 {
			if top := t.lastTop[n.row.ID]; n.anchored && top.id != 0 {
				return top
			}
			return refOf(n)
		}
		c := n.children[i-1]
		if c.be && c.popped(ts, seq) {
			return refOf(n)
		}
		n = c
	}
}

// nextAfter returns the first slice of r's subtree, in start order, that
// begins after ts (or at it, after the flow event seq: see node.begun),
// or nil.
func nextAfter(r *node, ts int64, seq uint32) *node {
	if !r.begun(ts, seq) {
		return r
	}
	for _, c := range r.children {
		if c.end < ts && c.row.TS <= ts {
			continue
		}
		if n := nextAfter(c, ts, seq); n != nil {
			return n
		}
	}
	return nil
}

// staleTop returns the slice r leaves on top of
// trace_processor's stack once it ended: its last slice, going down the
// last children, but none of a B/E pair (its E pops it).
func staleTop(r *node) sliceRef {
	if r.be {
		return sliceRef{}
	}
	n := r
	for len(n.children) > 0 {
		c := n.children[len(n.children)-1]
		if c.be {
			break
		}
		n = c
	}
	return refOf(n)
}

// unbound notes that p binds to no slice (flow_no_enclosing_slice).
func (b *Builder) unbound(p *flowPoint) error {
	b.Report.UnboundFlows++
	return b.bindSlice(p, sliceRef{})
}

// bind binds p to the slice n.
func (b *Builder) bind(p *flowPoint, n *node) error {
	return b.bindSlice(p, refOf(n))
}

// bindSlice binds p to the slice s (none if its id is 0), and writes its
// flow's arrows once an f came and all of its events are bound.
func (b *Builder) bindSlice(p *flowPoint, s sliceRef) error {
	p.slice = s
	c := p.chain
	c.waiting--
	if c.ended && c.waiting == 0 {
		// Complete: written now, to keep memory per open flow. The
		// flow stays, for events of its id to come.
		if err := b.flushChain(c); err != nil {
			return err
		}
		if b.writtenFlows++; b.writtenFlows > maxWrittenFlows {
			b.dropWrittenFlows()
		}
	}
	return nil
}

// dropWrittenFlows forgets the flows whose events are all written.
func (b *Builder) dropWrittenFlows() {
	for k, c := range b.flows {
		if len(c.points) == 0 {
			delete(b.flows, k)
		}
	}
	b.writtenFlows = 0
}

// flushChain writes the arrows of c's events (see Flows), from where
// those written before left it, and keeps where they leave it.
func (b *Builder) flushChain(c *flowChain) error {
	pts := c.points
	slices.SortStableFunc(pts, func(x, y *flowPoint) int {
		xts, xr := x.order()
		yts, yr := y.order()
		return cmp.Or(cmp.Compare(xts, yts), cmp.Compare(xr, yr))
	})
	st := &c.state
	for _, p := range pts {
		ts, _ := p.order()
		if ts < st.ts {
			// After an event of its id written before, in time:
			// trace_processor takes it before that.
			b.Report.LateFlows++
		}
		st.ts = max(st.ts, ts)
		switch {
		case p.slice.id == 0:
			continue // flow_no_enclosing_slice: it draws nothing
		case st.last.id == 0:
			if p.ph == 's' {
				st.last = p.slice
			}
			continue // a t or f before the start draws nothing
		case p.ph == 's':
			continue // flow_duplicate_id
		}
		out, in := st.last, p.slice
		if out.ts > in.ts && !p.next {
			out, in = in, out
		}
		b.nextFlow++
		f := Flow{ID: b.nextFlow, SliceOut: out.id, SliceIn: in.id, Name: c.name, Category: c.cat}
		if err := b.sink.Flow(&f); err != nil {
			return err
		}
		if p.ph == 't' {
			st.last = p.slice
		}
	}
	c.points, c.ended = nil, false
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
