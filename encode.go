package tracer

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// MaxStringLen is the longest name, category, key or string value written
// as is, in bytes. A longer string is cut at a character boundary and ends
// with a marker saying how many bytes were cut, so a runaway value cannot
// make a trace unloadable.
const MaxStringLen = 4096

// An encoder turns records into JSON lines: one event per line, each
// followed by a comma. It appends to buf and never reflects or allocates
// beyond growing buf.
type encoder struct {
	buf   []byte
	pid   int
	base  int64       // nanotime of ts 0
	names *trackNames // told of every goroutine with an event, if not nil
}

// event appends an event that stands alone: instant, counter or metadata.
// cont holds the continuation records with more args, if any.
func (e *encoder) event(r *record, cont []record) {
	b := e.buf
	switch r.kind {
	case kindThreadName:
		b = append(b, `{"name":"thread_name","ph":"M"`...)
		b = e.appendIDs(b, r.gid)
		b = append(b, `,"args":{"name":`...)
		b = appendString(b, r.name)
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
		e.buf = appendTail(b, r, cont)
	case kindCounter:
		b = e.appendHead(b, r, 'C', r.at)
		b = append(b, `,"pid":`...)
		b = strconv.AppendInt(b, int64(e.pid), 10)
		e.buf = appendTail(b, r, cont)
	case kindAsyncBegin, kindAsyncInstant, kindAsyncEnd:
		// id2.local puts the async track under this process in Perfetto;
		// a plain id would land on a global track.
		b = e.appendHead(b, r, asyncPhase[r.kind-kindAsyncBegin], r.at)
		b = e.appendIDs(b, r.gid)
		b = append(b, `,"id2":{"local":"0x`...)
		b = strconv.AppendUint(b, r.id, 16)
		b = append(b, `"}`...)
		b = appendScope(b, r)
		e.buf = appendTail(b, r, cont)
	case kindFlowStart, kindFlowStep, kindFlowEnd:
		b = e.appendHead(b, r, flowPhase[r.kind-kindFlowStart], r.at)
		b = e.appendIDs(b, r.gid)
		b = append(b, `,"id":`...)
		b = strconv.AppendUint(b, r.id, 10)
		if r.kind == kindFlowEnd {
			// Bind to the enclosing slice, like s and t, rather than
			// to the next slice that begins after it.
			b = append(b, `,"bp":"e"`...)
		}
		b = appendScope(b, r)
		e.buf = appendTail(b, r, cont)
	}
}

var (
	asyncPhase = [...]byte{'b', 'n', 'e'}
	flowPhase  = [...]byte{'s', 't', 'f'}
)

func appendScope(b []byte, r *record) []byte {
	if r.scope == 0 {
		return b
	}
	b = append(b, `,"scope":`...)
	return appendString(b, scopes.name(r.scope))
}

// complete appends the X event of a span that started with r and lasted dur.
func (e *encoder) complete(r *record, cont []record, dur int64) {
	b := e.appendHead(e.buf, r, 'X', r.at)
	b = append(b, `,"dur":`...)
	b = appendMicros(b, dur)
	b = e.appendIDs(b, r.gid)
	e.buf = appendTail(b, r, cont)
}

// begin appends the B event of a span that started with r.
func (e *encoder) begin(r *record, cont []record) {
	b := e.appendHead(e.buf, r, 'B', r.at)
	b = e.appendIDs(b, r.gid)
	e.buf = appendTail(b, r, cont)
}

// end appends the E event, at time at, of the span that began with r.
func (e *encoder) end(r *record, at int64) {
	b := e.appendHead(e.buf, r, 'E', at)
	b = e.appendIDs(b, r.gid)
	e.buf = append(b, "},\n"...)
}

// appendHead starts the event recorded as r: name, category, phase and
// timestamp.
func (e *encoder) appendHead(b []byte, r *record, ph byte, at int64) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, r.name)
	if r.cat != 0 {
		b = append(b, `,"cat":`...)
		b = appendString(b, categories.name(r.cat))
	}
	b = append(b, `,"ph":"`...)
	b = append(b, ph)
	b = append(b, `","ts":`...)
	return appendMicros(b, at-e.base)
}

func (e *encoder) appendIDs(b []byte, gid uint64) []byte {
	if e.names != nil {
		e.names.see(gid)
	}
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(e.pid), 10)
	b = append(b, `,"tid":`...)
	return strconv.AppendUint(b, gid, 10)
}

// appendTail ends an event with its args, inline and continued. Category
// and scope args are not args: appendHead and appendScope wrote them.
func appendTail(b []byte, r *record, cont []record) []byte {
	first := true
	for i := 0; i < int(r.nargs); i++ {
		a := &r.args[i%inlineArgs]
		if i >= inlineArgs {
			a = &cont[i/inlineArgs-1].args[i%inlineArgs]
		}
		if a.kind >= argCategory {
			continue
		}
		if first {
			b = append(b, `,"args":{`...)
		}
		b = appendArg(b, a, first)
		first = false
	}
	if !first {
		b = append(b, '}')
	}
	return append(b, "},\n"...)
}

// appendMicros writes a nanosecond count as microseconds with three
// decimals, the precision Perfetto keeps without rounding.
func appendMicros(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	frac := ns % 1000
	return append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

func appendArg(b []byte, a *Arg, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = appendString(b, a.key)
	b = append(b, ':')
	switch a.kind {
	case argString:
		return appendString(b, a.str)
	case argInt:
		return strconv.AppendInt(b, int64(a.num), 10)
	case argUint:
		return strconv.AppendUint(b, a.num, 10)
	case argFloat:
		return appendFloat(b, math.Float64frombits(a.num))
	case argBool:
		return strconv.AppendBool(b, a.num != 0)
	}
	return append(b, "null"...) // the zero Arg
}

// appendFloat writes f as a JSON number, or as a string for the values JSON
// cannot hold.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"+Inf"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Inf"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string that is valid UTF-8 whatever s
// holds: quotes, backslashes and control characters are escaped, each byte
// of invalid UTF-8 becomes U+FFFD, and strings over MaxStringLen are cut.
func appendString(b []byte, s string) []byte {
	cut := 0
	if len(s) > MaxStringLen {
		n := MaxStringLen
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		cut = len(s) - n
		s = s[:n]
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	if cut > 0 {
		b = append(b, "…[truncated "...)
		b = strconv.AppendInt(b, int64(cut), 10)
		b = append(b, " bytes]"...)
	}
	return append(b, '"')
}
