package tables

import (
	"slices"
	"sort"

	"github.com/gotracer/tracer/internal/tracefile"
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
	at := sort.Search(len(t.points), func(i int) bool { return t.points[i].ts > ts })
	t.points = slices.Insert(t.points, at, p)
	if p.next {
		t.nexts++
	}
	b.wait(t)
	return nil
}

// bindFlows binds the flow events of t that the root r, about to be
// written, holds: those in its time, and those waiting for the next
// slice before it. t.points is sorted by ts, so this costs the points
// bound, not all those waiting.
func (b *Builder) bindFlows(t *track, r *node) error {
	pts := t.points
	i := sort.Search(len(pts), func(i int) bool { return pts[i].ts >= r.row.TS })
	j := i
	for j < len(pts) && pts[j].ts < r.end {
		j++
	}
	for _, p := range pts[i:j] {
		n := r
		for {
			var in *node
			for _, c := range n.children {
				if c.row.TS <= p.ts && p.ts < c.end {
					in = c
				}
			}
			if in == nil {
				break
			}
			n = in
		}
		if err := b.bind(p, n); err != nil {
			return err
		}
	}
	pts = slices.Delete(pts, i, j)
	if t.nexts > 0 {
		// An f without "bp":"e" binds to the next slice to begin.
		keep := pts[:0]
		for k, p := range pts {
			if k >= i || !p.next {
				keep = append(keep, p)
				continue
			}
			t.nexts--
			if err := b.bind(p, r); err != nil {
				return err
			}
		}
		clear(pts[len(keep):])
		pts = keep
	}
	t.points = pts
	return nil
}

// bind binds p to the slice n, and writes its flow's arrows once all of
// its events are bound.
func (b *Builder) bind(p *flowPoint, n *node) error {
	p.slice = n.row.ID
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
