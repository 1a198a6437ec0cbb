// Package tracefile reads Chrome Trace Event Format files as a stream of
// events, fast: the one reader of trace files in this repository, used by
// the tracer command, its export modules, the tests (through
// internal/tracecheck) and the benchmarks.
//
// A file is read in one pass with a hand-written JSON scanner that
// validates every event as strictly as encoding/json does and picks out
// only the fields a reader needs, without allocating per event. It
// reads files of one event per line (as the tracer package writes them),
// files holding the whole array on one line, and the object form
// {"traceEvents":[...]}; all three at the same speed, since the scanner
// never relies on line breaks, only counts them for line numbers.
package tracefile

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/gotracer/tracer/internal/jsonenc"
)

// An Event is one trace event as read from a file. Its byte slices point
// into the reader's buffer and are valid until the next call to Next.
type Event struct {
	Raw  []byte // the event's JSON text, from '{' to '}'
	Line int    // the line the event starts on, from 1

	Ph   []byte // the phase, as written (normally one byte)
	Name Str
	Cat  Str

	TS, Dur       int64 // nanoseconds, parsed from microseconds
	HasTS, HasDur bool

	Pid, Tid Num

	ID      []byte // id, or id2's local or global value, as written (quotes included)
	IDLocal bool   // the id came from id2.local: the async track is the process's
	Scope   Str
	BP      Str
	S       Str // an instant's scope: t (thread, the default), p or g

	Args []Arg // the top-level members of args, in order
	// ArgsDepth is how deep objects nest in args, args itself counted:
	// catapult fails on the file past about 7,000 ("Maximum call stack
	// size exceeded"); Perfetto reads any depth.
	ArgsDepth int

	// BadUTF8 is the offset in Raw of the first byte of invalid UTF-8 in
	// a string, or -1. Go's and JavaScript's JSON parsers accept it (as
	// U+FFFD); it is still a problem: the text was not what was meant.
	BadUTF8 int

	// Spans of values in Raw, for rewriting: [start, end) or zero. Of a
	// member written twice, the last, which the viewers read.
	TSSpan, DurSpan, PidSpan, PhSpan Span
}

// A Span is a range [Start, End) of bytes in Event.Raw.
type Span struct{ Start, End int }

// Valid reports whether the span was set.
func (s Span) Valid() bool { return s.End > 0 }

// A Str is a JSON string value: the bytes between its quotes, as written.
type Str struct {
	Raw     []byte
	Escaped bool // Raw holds escapes: use String or Append to decode it
	Set     bool // the member was present and a string
}

// String returns s decoded.
func (s Str) String() string {
	if !s.Escaped {
		return string(s.Raw)
	}
	return string(s.Append(nil))
}

// Append appends s decoded to b.
func (s Str) Append(b []byte) []byte {
	if !s.Escaped {
		return append(b, s.Raw...)
	}
	return unescape(b, s.Raw)
}

// A Num is a pid or tid: an integer, or a string (which Perfetto hashes
// into a number and shows as the name).
type Num struct {
	Int    int64
	Str    []byte // the string's bytes, if the value was a string
	Kind   NumKind
	Raw    []byte // the value as written
	Frac   bool   // a number with a fraction, which viewers truncate
	Bounds bool   // an integer outside [0, 2^32-1], which Perfetto maps to 0
}

// NumKind says what a pid or tid held.
type NumKind uint8

// The kinds of pid and tid.
const (
	NumNone   NumKind = iota // absent
	NumInt                   // a number
	NumString                // a string
	NumOther                 // anything else (null, object...)
)

// An Arg is one member of an event's args.
type Arg struct {
	Key   Str
	Value []byte // as written
	IsNum bool   // the value is a number: see Float
	Str   Str    // the value, if a string
	Span  Span
}

// Float returns the value of a number; one beyond the range of a float64
// (1e999) is the largest float64 of its sign, which JSON can still hold.
func (a *Arg) Float() float64 {
	f, _ := strconv.ParseFloat(string(a.Value), 64)
	if math.IsInf(f, 0) {
		f = math.Copysign(math.MaxFloat64, f)
	}
	return f
}

// Number returns the value of a number, or of a string that Perfetto
// reads as one (as C's strtod does: "050", ".75", "+10.5", " 1"), and
// whether it was either.
func (a *Arg) Number() (float64, bool) {
	if a.IsNum {
		return a.Float(), true
	}
	if !a.Str.Set || a.Str.Escaped {
		return 0, false
	}
	t := bytes.TrimLeft(a.Str.Raw, " \t\n\v\f\r")
	if len(t) == 0 || bytes.IndexByte(t, '_') >= 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// Arg returns the arg named key, or nil.
func (e *Event) Arg(key string) *Arg {
	for i := range e.Args {
		if !e.Args[i].Key.Escaped && string(e.Args[i].Key.Raw) == key {
			return &e.Args[i]
		}
	}
	return nil
}

// Phase returns the event's phase as one byte, or 0 if it has none or
// more than one.
func (e *Event) Phase() byte {
	if len(e.Ph) != 1 {
		return 0
	}
	return e.Ph[0]
}

// AppendMicros appends ns as microseconds with three decimals, the form
// the tracer package writes ts and dur in.
func AppendMicros(b []byte, ns int64) []byte { return jsonenc.Micros(b, ns) }

// unescape appends the JSON string body s, escapes decoded, to b. s is
// known to be valid.
func unescape(b, s []byte) []byte {
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			return append(b, s...)
		}
		b = append(b, s[:i]...)
		c := s[i+1]
		s = s[i+2:]
		switch c {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := rune(hex4(s))
			s = s[4:]
			if r >= 0xd800 && r < 0xdc00 && len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
				if r2 := rune(hex4(s[2:])); r2 >= 0xdc00 && r2 < 0xe000 {
					r = (r-0xd800)<<10 | (r2 - 0xdc00) + 0x10000
					s = s[6:]
				}
			}
			b = utf8.AppendRune(b, r) // a lone surrogate becomes U+FFFD
		default: // '"', '\\', '/'
			b = append(b, c)
		}
	}
	return b
}

func hex4(s []byte) int {
	n := 0
	for _, c := range s[:4] {
		n <<= 4
		switch {
		case c >= '0' && c <= '9':
			n |= int(c - '0')
		case c >= 'a' && c <= 'f':
			n |= int(c - 'a' + 10)
		default:
			n |= int(c - 'A' + 10)
		}
	}
	return n
}
