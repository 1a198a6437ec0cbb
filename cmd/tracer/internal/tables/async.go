package tables

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/gotracer/tracer/internal/tracefile"
)

// asyncEvent follows a b, n or e event. trace_processor puts an async
// operation on a track of its id and category: a process's track for an
// id2.local, a global one for a plain id (it ignores scope), named after
// the first event on it. It takes the events of a track sorted by ts (in
// file order at one ts), and nests them with a stack, as it nests a
// thread's: a b begins a slice, an e ends the innermost slice of its name
// still open, an n is a slice of no duration, and a slice left open
// inside one that ended is cut at its end once a later event comes
// (misplaced_end_event). So the events of an async track are kept to the
// end of the group and replayed so (see replayAsync): a b's e may come
// before it in the file (Node.js's worker threads), and operations of
// several threads share a track when their ids are the same.
func (b *Builder) asyncEvent(e *tracefile.Event, ph byte, ts int64) error {
	if e.ID == nil {
		return nil
	}
	var upid *int64
	k := append(b.key[:0], 'g')
	if e.IDLocal {
		p := b.process(e.Pid)
		upid = &p.row.Upid
		k = strconv.AppendInt(k[:0], p.row.Upid, 10)
	}
	k = append(k, 0)
	k = append(k, e.Cat.Raw...)
	k = append(k, 0)
	k = append(k, e.ID...)
	t := b.async[string(k)]
	if t == nil {
		t = b.newTrack(e.Name.String(), "async", nil, upid)
		b.async[string(k)] = t
		t.asyncTrack = true
		t.upid = upid
	}
	ev := asyncItem{ts: ts, seq: b.Report.Events, ph: ph, name: b.intern(e.Name)}
	switch ph {
	case 'b', 'n':
		dur := int64(-1)
		if ph == 'n' {
			dur = 0
		}
		n := b.nodeOn(e, ts, dur, t, nil, upid)
		n.be = ph == 'b'
		b.bindFlow(e, n, 0)
		ev.n = n
	case 'e':
		ev.args = b.argsOf(e, "")
	}
	t.asyncs = append(t.asyncs, ev)
	b.wait(t)
	return nil
}

// maxDepth is how deep trace_processor nests slices on a track: it
// drops those deeper (slice_max_depth_exceeded).
const maxDepth = 512

// An asyncItem is an async event kept to the end of its group.
type asyncItem struct {
	ts, seq int64
	ph      byte
	name    string
	n       *node  // the slice a b or n begins
	args    string // an e's args
}

// replayAsync nests the events of the async track t as trace_processor
// does (see asyncEvent) and writes its slices.
func (b *Builder) replayAsync(t *track) error {
	evs := t.asyncs
	slices.SortStableFunc(evs, func(x, y asyncItem) int { return cmp.Or(cmp.Compare(x.ts, y.ts), cmp.Compare(x.seq, y.seq)) })
	var stack []*node
	var all []*node
	for i := range evs {
		ev := &evs[i]
		// Pop what ended before ev; an open slice above one that ended
		// before it is cut at that end, with all above it.
		incomplete := false
		for q := len(stack) - 1; q >= 0; q-- {
			s := stack[q]
			if s.end == math.MaxInt64 {
				incomplete = true
				continue
			}
			if incomplete {
				if ev.ts <= s.end {
					continue
				}
				for _, o := range stack[q+1:] {
					o.end, o.row.Dur = s.end, s.end-o.row.TS
				}
				stack = stack[:q]
				incomplete = false
				continue
			}
			if s.end < ev.ts || s.end == ev.ts && !(s.row.TS == s.end && ev.ph == 'n') {
				stack = append(stack[:q], stack[q+1:]...)
			}
		}
		switch ev.ph {
		case 'b', 'n':
			n := ev.n
			n.row.Depth = int32(len(stack))
			if len(stack) > 0 {
				n.row.ParentID = b.arena.int64Ptr(stack[len(stack)-1].row.ID)
			}
			if len(stack) >= maxDepth {
				b.Report.TooDeep++
				b.nodes.put(n)
				continue // trace_processor drops it (slice_max_depth_exceeded)
			}
			stack = append(stack, n)
			all = append(all, n)
		case 'e':
			for q := len(stack) - 1; q >= 0; q-- {
				n := stack[q]
				if n.end != math.MaxInt64 || ev.name != "" && n.row.Name != ev.name {
					continue
				}
				n.end = max(ev.ts, n.row.TS)
				n.row.Dur = n.end - n.row.TS
				if ev.args != "" {
					n.args = mergeArgs(b, n.args, ev.args)
				}
				if q == len(stack)-1 {
					stack = stack[:q]
				}
				break
			}
		}
	}
	for _, n := range all {
		if n.end == math.MaxInt64 {
			n.row.Dur = -1
		}
		if n.args != "" {
			n.row.Args = b.arena.stringPtr(n.args)
		}
		if err := b.sink.Slice(&n.row); err != nil {
			return err
		}
		b.Report.Slices++
		b.nodes.put(n)
	}
	clear(t.asyncs)
	t.asyncs = t.asyncs[:0]
	return nil
}

// mergeArgs returns the args object prev with the members of the object
// add after them, as an e's args join its b's.
func mergeArgs(b *Builder, prev, add string) string {
	if prev == "" {
		return add
	}
	b.args = append(append(b.args[:0], prev[:len(prev)-1]...), ',')
	b.args = append(b.args, add[1:]...)
	return b.arena.string(b.args)
}

// namedTrack returns the instant track of a process (key: its upid) or
// of the trace (typ global).
func (b *Builder) namedTrack(typ, key string, upid *int64) *track {
	t := b.named[typ+key]
	if t == nil {
		t = b.newTrack("", typ, nil, upid)
		b.named[typ+key] = t
	}
	return t
}

// counterEvent follows a C event: one row per numeric arg, on the track
// "NAME KEY" of the process (with " id: ID" after NAME for an id).
func (b *Builder) counterEvent(e *tracefile.Event, ts int64) error {
	p := b.process(e.Pid)
	for i := range e.Args {
		a := &e.Args[i]
		if !a.IsNum {
			continue
		}
		k := strconv.AppendInt(b.key[:0], p.row.Upid, 10)
		k = append(k, 0)
		at := len(k)
		k = e.Name.Append(k)
		if e.ID != nil {
			k = append(k, " id: "...)
			k = append(k, trimQuotes(e.ID)...)
		}
		k = append(k, ' ')
		k = a.Key.Append(k)
		b.key = k
		c, ok := b.counters[string(k)]
		if !ok {
			c.name = string(k[at:])
			c.id = b.newTrack(c.name, "counter", nil, &p.row.Upid).id
			b.counters[string(k)] = c
		}
		b.nextCounter++
		b.counter = Counter{ID: b.nextCounter, TS: ts, TrackID: c.id, Value: a.Float(), Name: c.name, Upid: p.row.Upid}
		if err := b.sink.Counter(&b.counter); err != nil {
			return err
		}
	}
	return nil
}

func trimQuotes(id []byte) []byte {
	if len(id) >= 2 && id[0] == '"' {
		return id[1 : len(id)-1]
	}
	return id
}

// A counterTrack is a series of a counter.
type counterTrack struct {
	id   int64
	name string
}
