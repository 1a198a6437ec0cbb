package tracer

// The encoder as it was before records became slots (issue 9), kept as the
// reference the differential test compares today's encoder with: for the
// same events the output must be the same, byte for byte.

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gotracer/tracer/internal/jsonenc"
)

// inlineArgs is how many args a refRecord held itself; more went into
// continuation records.
const inlineArgs = 4

// refRecord is the record the reference encoder read: one fixed-size
// struct per event, args inline and in continuation records.
type refRecord struct {
	at    int64
	gid   uint64
	id    uint64
	name  string
	kind  kind
	flags uint8
	nargs uint8
	cat   uint16
	scope uint16
	track uint32
	args  [inlineArgs]Arg
}

// A refEncoder turns records into JSON lines: one event per line, each
// followed by a comma. It appends to buf and never reflects or allocates
// beyond growing buf.
type refEncoder struct {
	buf  []byte
	pid  int
	base int64 // nanotime of ts 0

}

// event appends an event that stands alone: instant, counter or metadata.
// cont holds the continuation records with more args, if any.
func (e *refEncoder) event(r *refRecord, cont []refRecord) {
	b := e.buf
	switch r.kind {
	case kindThreadName:
		b = append(b, `{"name":"thread_name","ph":"M"`...)
		b = e.appendIDs(b, r.gid)
		b = append(b, `,"args":{"name":`...)
		b = jsonenc.String(b, r.name)
		e.buf = append(b, "}},\n"...)
	case kindThreadSort:
		b = append(b, `{"name":"thread_sort_index","ph":"M"`...)
		b = e.appendIDs(b, r.gid)
		b = append(b, `,"args":{"sort_index":`...)
		b = strconv.AppendInt(b, int64(r.id), 10)
		e.buf = append(b, "}},\n"...)
	case kindInstant:
		b = e.appendHead(b, r, 'i', r.at)
		b = append(b, `,"s":"`...)
		b = append(b, r.flags, '"')
		b = e.appendIDs(b, r.gid)
		e.buf = refAppendTail(b, r, cont)
	case kindCounter:
		b = e.appendHead(b, r, 'C', r.at)
		b = append(b, `,"pid":`...)
		b = strconv.AppendInt(b, int64(e.pid), 10)
		e.buf = refAppendTail(b, r, cont)
	case kindAsyncBegin, kindAsyncInstant, kindAsyncEnd:
		// id2.local puts the async track under this process in Perfetto;
		// a plain id would land on a global track.
		b = e.appendHead(b, r, refAsyncPhase[r.kind-kindAsyncBegin], r.at)
		b = e.appendIDs(b, r.gid)
		b = append(b, `,"id2":{"local":"`...)
		if r.scope != 0 {
			scope := jsonenc.String(nil, scopes.name(r.scope))
			b = append(b, scope[1:len(scope)-1]...)
			b = append(b, ':')
		}
		b = append(b, "0x"...)
		b = strconv.AppendUint(b, r.id, 16)
		if r.track != 0 {
			b = append(b, '.')
			b = strconv.AppendUint(b, uint64(r.track), 16)
		}
		b = append(b, `"}`...)
		b = refAppendScope(b, r)
		e.buf = refAppendTail(b, r, cont)
	case kindFlowBegin, kindFlowStep, kindFlowEnd:
		b = e.appendHead(b, r, refFlowPhase[r.kind-kindFlowBegin], r.at)
		b = e.appendIDs(b, r.gid)
		b = append(b, `,"id":`...)
		b = strconv.AppendUint(b, r.id, 10)
		if r.kind == kindFlowEnd {
			// Bind to the enclosing slice, like s and t, rather than
			// to the next slice that begins after it.
			b = append(b, `,"bp":"e"`...)
		}
		b = refAppendScope(b, r)
		e.buf = refAppendTail(b, r, cont)
	}
}

var (
	refAsyncPhase = [...]byte{'b', 'n', 'e'}
	refFlowPhase  = [...]byte{'s', 't', 'f'}
)

func refAppendScope(b []byte, r *refRecord) []byte {
	if r.scope == 0 {
		return b
	}
	b = append(b, `,"scope":`...)
	return jsonenc.String(b, scopes.name(r.scope))
}

// complete appends the X event of a span that started with r and lasted dur.
func (e *refEncoder) complete(r *refRecord, cont []refRecord, dur int64) {
	b := e.appendHead(e.buf, r, 'X', r.at)
	b = append(b, `,"dur":`...)
	b = jsonenc.Micros(b, dur)
	b = e.appendIDs(b, r.gid)
	e.buf = refAppendTail(b, r, cont)
}

// begin appends the B event of a span that started with r.
func (e *refEncoder) begin(r *refRecord, cont []refRecord) {
	b := e.appendHead(e.buf, r, 'B', r.at)
	b = e.appendIDs(b, r.gid)
	e.buf = refAppendTail(b, r, cont)
}

// end appends the E event, at time at, of the span that began with r.
func (e *refEncoder) end(r *refRecord, at int64) {
	b := e.appendHead(e.buf, r, 'E', at)
	b = e.appendIDs(b, r.gid)
	e.buf = append(b, "},\n"...)
}

// appendHead starts the event recorded as r: name, category, phase and
// timestamp.
func (e *refEncoder) appendHead(b []byte, r *refRecord, ph byte, at int64) []byte {
	b = append(b, `{"name":`...)
	b = jsonenc.String(b, r.name)
	if r.cat != 0 {
		b = append(b, `,"cat":`...)
		b = jsonenc.String(b, categories.name(r.cat))
	} else if ph == 'b' || ph == 'n' || ph == 'e' {
		b = append(b, `,"cat":""`...)
	}
	b = append(b, `,"ph":"`...)
	b = append(b, ph)
	b = append(b, `","ts":`...)
	return jsonenc.Micros(b, at-e.base)
}

func (e *refEncoder) appendIDs(b []byte, gid uint64) []byte {
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(e.pid), 10)
	b = append(b, `,"tid":`...)
	return strconv.AppendUint(b, gid, 10)
}

// refAppendTail ends an event with its args, inline and continued. Category
// and scope args are not args: appendHead and refAppendScope wrote them. An
// arg whose key (as written) a later arg repeats is left out: the later one
// replaces it.
func refAppendTail(b []byte, r *refRecord, cont []refRecord) []byte {
	type keyValue struct{ key, value []byte }
	var args []keyValue
	for i := 0; i < int(r.nargs); i++ {
		a := &r.args[i%inlineArgs]
		if i >= inlineArgs {
			a = &cont[i/inlineArgs-1].args[i%inlineArgs]
		}
		if a.kind == argCategory || a.kind == argScope || a.kind == 0 { // the zero Arg is ignored
			continue
		}
		args = append(args, keyValue{append(jsonenc.String(nil, a.key), ':'), refArgValue(a)})
	}
	first := true
	for i, a := range args {
		if slices.ContainsFunc(args[i+1:], func(later keyValue) bool { return bytes.Equal(later.key, a.key) }) {
			continue
		}
		if first {
			b = append(b, `,"args":{`...)
		} else {
			b = append(b, ',')
		}
		b = append(append(b, a.key...), a.value...)
		first = false
	}
	if !first {
		b = append(b, '}')
	}
	return append(b, "},\n"...)
}

// refArgValue returns a's value as JSON.
func refArgValue(a *Arg) []byte {
	switch a.kind {
	case argString:
		return jsonenc.String(nil, a.str)
	case argInt:
		return strconv.AppendInt(nil, int64(a.num), 10)
	case argUint:
		return strconv.AppendUint(nil, a.num, 10)
	case argFloat:
		return jsonenc.Float(nil, math.Float64frombits(a.num))
	case argBool:
		return strconv.AppendBool(nil, a.num != 0)
	case argDuration:
		return jsonenc.String(nil, refDuration(time.Duration(a.num)))
	case argTime:
		return jsonenc.String(nil, time.Unix(0, int64(a.num)).UTC().Format(time.RFC3339Nano))
	case argTimeSec:
		return jsonenc.String(nil, time.Unix(int64(a.num), 0).UTC().Format(time.RFC3339Nano))
	}
	panic("the zero Arg is never written")
}

// refDuration is appendDuration's text, made the slow way.
func refDuration(d time.Duration) string {
	for _, u := range []struct {
		name string
		per  time.Duration
	}{{"s", time.Second}, {"ms", time.Millisecond}, {"µs", time.Microsecond}} {
		if d >= u.per || d <= -u.per {
			return strconv.FormatFloat(float64(d)/float64(u.per), 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}
