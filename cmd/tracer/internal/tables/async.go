package tables

import (
	"strconv"

	"github.com/gotracer/tracer/internal/tracefile"
)

// asyncEvent follows a b, n or e event. trace_processor puts an async
// operation on a track of its id and category: a process's track for an
// id2.local, a global one for a plain id (it ignores scope), named after
// the first event on it. Its b/e pairs nest on that track by a stack.
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
	}
	switch ph {
	case 'b':
		n := b.nodeOn(e, ts, -1, t, nil, upid)
		b.bindFlow(e, n, 0)
		t.seeStart(ts)
		t.open = append(t.open, n)
		b.wait(t)
	case 'e':
		// The innermost open operation of the same name ends; an e
		// without a name ends the innermost.
		for i := len(t.open) - 1; i >= 0; i-- {
			n := t.open[i]
			if len(e.Name.Raw) > 0 && n.row.Name != b.intern(e.Name) {
				continue
			}
			t.open = append(t.open[:i], t.open[i+1:]...)
			b.end(n, ts, e)
			return b.place(t, n, true)
		}
	case 'n':
		n := b.nodeOn(e, ts, 0, t, nil, upid)
		b.bindFlow(e, n, 0)
		return b.place(t, n, false)
	}
	return nil
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
