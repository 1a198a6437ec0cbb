package tracefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A Problem is something wrong with a file that a viewer would trip on.
type Problem struct {
	Line int
	Kind Kind
	Msg  string
	// Perfetto and Catapult say what each viewer's importer reports of
	// it, where that is known: the name of the import error (Perfetto's
	// stats) or warning (catapult's importWarning type), Refuses for a
	// file it does not load, ShowsNothing for one it loads empty, "" for
	// nothing (it may still show the file otherwise than it was meant:
	// Msg says how).
	Perfetto, Catapult string
}

// What a viewer does with a whole file, for Problem.Perfetto and
// Problem.Catapult.
const (
	Refuses      = "refuses the file"
	ShowsNothing = "shows nothing"
)

// Kind sorts problems, for tests and for the summary check prints.
type Kind string

// The kinds of problems the Reader reports. Check adds the kinds of
// problems that need the events' meaning (see Kind* in check.go).
const (
	KindSyntax  Kind = "syntax"      // an event that is not valid JSON
	KindTorn    Kind = "torn"        // the file ends inside an event
	KindFraming Kind = "framing"     // the array around the events
	KindNotJSON Kind = "not a trace" // the file does not start as a JSON trace: nothing to read
	KindUTF8    Kind = "utf8"        // invalid UTF-8 in a string
	KindDetect  Kind = "detect"      // Perfetto would not recognise the file as JSON
	KindStrict  Kind = "strict"      // not JSON, but Perfetto reads it: chrome://tracing refuses the file
	KindGzip    Kind = "gzip"        // a cut or damaged gzip stream
	KindMembers Kind = "members"     // several gzip members: chrome://tracing reads the first
)

// maxEvent is the largest event the Reader takes, uncompressed. An event
// is held whole in memory, and the viewers fail long before this. (A var
// for tests.)
var maxEvent = 256 << 20

// perfettoSniff is how many first bytes Perfetto looks at to decide the
// file is JSON: it must find `{"` in them, after white space and an
// optional `[`.
const perfettoSniff = 128

// A Reader reads the events of a trace, one at a time, reporting problems
// with the file's framing and syntax through OnProblem. It never holds
// more than one event (and one read buffer) in memory.
type Reader struct {
	// OnProblem is called for each problem found, in file order. A
	// Reader with a nil OnProblem drops them.
	OnProblem func(Problem)
	// OnMember, if not nil, is called with each member of the top-level
	// object {"traceEvents":[...], ...} but traceEvents, its name and
	// value as written (systemTraceEvents, metadata, displayTimeUnit):
	// valid until the next call to Next.
	OnMember func(key, value []byte)

	r    io.Reader
	buf  []byte
	pos  int   // next byte to scan in buf
	base int64 // offset in the input of buf[0]
	// elemEnd is the offset in the input just past the last whole
	// element of the events' array, valid or not (or past its '['): where
	// Terminate closes the array.
	elemEnd int64
	line    int // line of buf[pos]
	eof     bool
	err     error // a read error other than io.EOF
	state   state
	obj     bool // the events are in {"traceEvents":[...]}
	first   bool // nothing scanned yet: check the start as Perfetto does
	sc      scanner
	ev      Event
	fixed   []byte // the event the lenient scanner took, rewritten as JSON
	end     bool   // Next returned io.EOF
	torn    bool   // the input ended inside an event
}

type state uint8

const (
	stStart      state = iota // before the first byte
	stArrayFirst              // after '['
	stAfterElem               // after an element
	stAfterComma              // after ',' between elements
	stObjFirst                // after the top-level '{'
	stObjKey                  // after ',' in the top-level object
	stObjAfter                // after a member of the top-level object
	stDone                    // after the closing ']' or '}'
)

// NewReader returns a Reader of the trace read from r, uncompressed.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: r, buf: make([]byte, 0, 1<<20), line: 1, first: true}
}

// Line returns the line the Reader has got to.
func (r *Reader) Line() int { return r.line }

func (r *Reader) problem(line int, k Kind, format string, args ...any) {
	r.problemV(line, k, "", "", format, args...)
}

// problemV reports a problem with what each viewer reports of it.
func (r *Reader) problemV(line int, k Kind, perfetto, catapult string, format string, args ...any) {
	if r.OnProblem != nil {
		r.OnProblem(Problem{Line: line, Kind: k, Msg: fmt.Sprintf(format, args...), Perfetto: perfetto, Catapult: catapult})
	}
}

// torn reports a file that ends inside an event: the bare array, which
// Perfetto reads up to the event before (chrome://tracing's JSON.parse
// fails), or the object form, which neither viewer loads.
func (r *Reader) tornAt(line int) {
	r.torn = true
	if r.obj {
		r.problemV(line, KindTorn, Refuses, Refuses, "the file ends inside an event, in the {\"traceEvents\":[ form, which neither viewer loads cut (tracer repair cuts the event and closes it)")
		return
	}
	r.problemV(line, KindTorn, "", Refuses, "the file ends inside an event (a torn last line, as a crash leaves it): Perfetto drops the event; chrome://tracing refuses the file (tracer repair cuts it)")
}

// fill reads more input, keeping buf[pos:]. It returns false at the end
// of the input.
func (r *Reader) fill() bool {
	if r.eof {
		return false
	}
	if r.pos > 0 {
		r.base += int64(r.pos)
		n := copy(r.buf[:cap(r.buf)], r.buf[r.pos:])
		r.buf, r.pos = r.buf[:n], 0
	}
	if len(r.buf) == cap(r.buf) {
		// The buffer holds one event, not whole yet: it doubles, up to
		// maxEvent exactly (append's growth would pass it).
		if len(r.buf) >= maxEvent {
			r.eof = true
			r.err = fmt.Errorf("line %d: an event larger than %d MiB", r.line, maxEvent>>20)
			return false
		}
		grown := make([]byte, len(r.buf), min(2*cap(r.buf), maxEvent))
		copy(grown, r.buf)
		r.buf = grown
	}
	// Read at least as much as is buffered already: the caller scans what
	// it holds again when an event is not whole, so reading a long event
	// in a gzip stream's small pieces would cost time quadratic in its
	// length (a 64 MB line took 24 s, against 0.2 s plain).
	want := min(cap(r.buf)-len(r.buf), max(len(r.buf), 64<<10))
	n, err := io.ReadAtLeast(r.r, r.buf[len(r.buf):cap(r.buf)], want)
	r.buf = r.buf[:len(r.buf)+n]
	if err != nil {
		// Progress either way: the end of the input is news to the
		// caller, who may have been waiting for more.
		r.eof = true
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			r.err = err
		}
	}
	return true
}

// Next returns the next valid event, or io.EOF after the last one, or
// the error that stopped the input. Events that are not valid JSON are
// reported to OnProblem and skipped: the Reader resumes at the next line.
func (r *Reader) Next() (*Event, error) {
	for {
		if r.end {
			return nil, io.EOF
		}
		ev, ok := r.step()
		if ev != nil {
			return ev, nil
		}
		if ok {
			continue
		}
		if r.fill() {
			continue
		}
		r.finish()
		r.end = true
		if r.err != nil {
			return nil, r.err
		}
		return nil, io.EOF
	}
}

// skipWS skips white space at pos, counting lines.
func (r *Reader) skipWS() {
	b := r.buf
	for r.pos < len(b) {
		switch b[r.pos] {
		case '\n':
			r.line++
		case ' ', '\t', '\r':
		default:
			return
		}
		r.pos++
	}
}

// step takes one step of the state machine. It returns an event, or
// ok=true if it made progress, or ok=false if it needs more input.
func (r *Reader) step() (ev *Event, ok bool) {
	if r.first {
		if len(r.buf)-r.pos < perfettoSniff && !r.eof {
			return nil, false
		}
		r.first = false
		if bytes.HasPrefix(r.buf[r.pos:], utf8BOM) {
			// catapult reads past it; Perfetto refuses the file.
			r.problemV(1, KindFraming, Refuses, "", "a UTF-8 byte order mark before the trace: Perfetto refuses the file (Unknown trace type); tracer repair removes it")
			r.pos += len(utf8BOM)
		}
		r.sniff()
	}
	r.skipWS()
	if r.pos >= len(r.buf) {
		return nil, false
	}
	c := r.buf[r.pos]
	switch r.state {
	case stStart:
		switch c {
		case '[':
			r.pos++
			r.state = stArrayFirst
			r.elemEnd = r.base + int64(r.pos)
		case '{':
			r.pos++
			r.state = stObjFirst
			r.obj = true
		default:
			r.problemV(r.line, KindNotJSON, Refuses, Refuses, "not a JSON trace: it starts with %s, not [ or {", printable(c))
			r.stop()
		}
		return nil, true
	case stArrayFirst, stAfterComma, stAfterElem:
		switch c {
		case ']':
			if r.state == stAfterComma {
				r.problemV(r.line, KindFraming, "", Refuses, "a comma before the closing ] (chrome://tracing refuses the file)")
			}
			r.pos++
			r.state = stDone
			if r.obj {
				r.state = stObjAfter
			}
			return nil, true
		case ',':
			if r.state != stAfterElem {
				r.problemV(r.line, KindFraming, "", Refuses, "a comma where an event should be (invalid JSON: chrome://tracing refuses the file)")
			}
			r.pos++
			r.state = stAfterComma
			return nil, true
		}
		if r.state == stAfterElem {
			r.problemV(r.line, KindFraming, "", Refuses, "no comma between two events (chrome://tracing refuses the file)")
			r.state = stAfterComma // reported once, if the element needs more input
		}
		return r.element()
	case stObjFirst, stObjKey:
		if c == '}' && r.state == stObjFirst {
			r.pos++
			r.state = stDone
			return nil, true
		}
		return r.member()
	case stObjAfter:
		switch c {
		case ',':
			r.pos++
			r.state = stObjKey
		case '}':
			r.pos++
			r.state = stDone
		default:
			r.problemV(r.line, KindFraming, Refuses, Refuses, "expected , or } after a member of the top-level object, found %s", printable(c))
			r.stop()
		}
		return nil, true
	default: // stDone
		r.problemV(r.line, KindFraming, "", Refuses, "text after the end of the trace: %s", printable(c))
		r.stop()
		return nil, true
	}
}

// stop gives up on the rest of the input.
func (r *Reader) stop() {
	r.pos = len(r.buf)
	r.eof = true
	r.state = stDone
}

// element scans the array element at pos.
func (r *Reader) element() (*Event, bool) {
	start := r.pos
	isEvent := r.buf[start] == '{'
	end := r.scan(start, isEvent, false)
	if end < 0 && !r.sc.short && isEvent {
		// What Perfetto reads and JSON.parse does not.
		if end = r.scan(start, true, true); end > 0 {
			if ev := r.lenientEvent(start, end); ev != nil {
				return ev, true
			}
			return nil, true
		}
		if r.sc.short && !r.eof {
			return nil, false
		}
		end = r.scan(start, true, false) // the strict error again
	}
	if end < 0 {
		if r.sc.short {
			if r.eof {
				r.tornAt(r.line)
				r.stop()
				return nil, true
			}
			return nil, false
		}
		r.syntaxError(start)
		return nil, true
	}
	line := r.line
	r.line += r.sc.nl
	r.pos = end
	r.elemEnd = r.base + int64(end)
	r.state = stAfterElem
	if !isEvent {
		r.problem(line, KindSyntax, "an array element that is not an event object: %.40s", r.buf[start:end])
		return nil, true
	}
	ev := &r.ev
	ev.Raw, ev.Line = r.buf[start:end], line
	if ev.BadUTF8 >= 0 {
		r.problem(line, KindUTF8, "invalid UTF-8 in a string (shown as U+FFFD)")
	}
	return ev, true
}

// scan scans the element at start, an event or any value, leniently or
// not, and returns the offset past it or -1.
func (r *Reader) scan(start int, isEvent, lenient bool) int {
	r.sc.reset(r.buf)
	r.sc.lenient = lenient
	if isEvent {
		return r.sc.event(start, &r.ev)
	}
	return r.sc.value(start)
}

// lenientEvent returns the event in buf[start:end], which the lenient
// scanner took, rewritten as JSON, after reporting what was wrong; nil
// if that failed (reported too).
func (r *Reader) lenientEvent(start, end int) *Event {
	raw := r.buf[start:end]
	line := r.line
	var what []string
	if r.sc.fixes&fixComma != 0 {
		what = append(what, "a comma before } or ]")
	}
	if r.sc.fixes&fixCtrl != 0 {
		what = append(what, "a raw control character in a string")
	}
	r.problemV(line, KindStrict, "", Refuses, "%s: not JSON, so chrome://tracing refuses the whole file; Perfetto reads it (tracer repair writes it as JSON)", strings.Join(what, " and "))
	r.line += bytes.Count(raw, []byte{'\n'})
	r.pos = end
	r.elemEnd = r.base + int64(end)
	r.state = stAfterElem
	r.fixed = fix(r.fixed[:0], raw)
	r.sc.reset(r.fixed)
	ev := &r.ev
	if r.sc.event(0, ev) != len(r.fixed) {
		// Not expected: fix leaves what the lenient scanner took as JSON.
		r.problem(line, KindSyntax, "invalid JSON, which the viewers refuse: %s", r.sc.errMsg)
		return nil
	}
	ev.Raw, ev.Line = r.fixed, line
	if ev.BadUTF8 >= 0 {
		r.problem(line, KindUTF8, "invalid UTF-8 in a string (shown as U+FFFD)")
	}
	return ev
}

// syntaxError reports the error the scanner found in the element at
// start and resumes at the next line.
func (r *Reader) syntaxError(start int) {
	// An error at a newline with only white space after it is a torn
	// last line (the newline met inside a string), not bad JSON.
	rel := r.sc.errOff - start
	blank := func() bool {
		rest := r.buf[r.pos+rel:]
		return rest[0] == '\n' && len(bytes.TrimSpace(rest)) == 0
	}
	for !r.eof && blank() && r.fill() {
	}
	start, r.sc.errOff = r.pos, r.pos+rel // fill may have moved the bytes
	line := r.line + bytes.Count(r.buf[start:r.sc.errOff], []byte{'\n'})
	next := bytes.IndexByte(r.buf[r.sc.errOff:], '\n')
	if r.eof && blank() {
		// Only white space follows: the last line is cut off, and its
		// newline (or the end) came where the event should go on.
		r.tornAt(r.line)
		r.stop()
		return
	}
	r.problemV(line, KindSyntax, Refuses, Refuses, "invalid JSON, which the viewers refuse: %s", r.sc.errMsg)
	if next < 0 {
		// The rest of the line may not be here yet: drop what is, and
		// go on dropping until a newline.
		r.line = line
		r.pos = len(r.buf)
		for r.fill() {
			if next = bytes.IndexByte(r.buf, '\n'); next >= 0 {
				r.elemEnd = r.base + int64(next)
				r.pos = next + 1
				r.line++
				r.state = stAfterComma
				return
			}
			r.pos = len(r.buf)
		}
		r.stop()
		return
	}
	r.elemEnd = r.base + int64(r.sc.errOff+next)
	r.pos = r.sc.errOff + next + 1
	r.line = line + 1
	r.state = stAfterComma
}

// member scans a member of the top-level object at pos: the events'
// array is read element by element, any other member whole.
func (r *Reader) member() (*Event, bool) {
	r.sc.reset(r.buf)
	i := r.pos
	if r.buf[i] != '"' {
		r.problemV(r.line, KindFraming, Refuses, Refuses, "expected a member name in the top-level object, found %s", printable(r.buf[i]))
		r.stop()
		return nil, true
	}
	keyEnd := r.sc.str(i)
	k := keyEnd
	if k > 0 {
		k = r.sc.ws(k)
		if k >= len(r.buf) {
			k = r.sc.needMore()
		} else if r.buf[k] != ':' {
			k = r.sc.fail(k, "expected : after a member name")
		}
	}
	if k > 0 {
		key := r.buf[i+1 : keyEnd-1]
		v := r.sc.ws(k + 1)
		if string(key) == "traceEvents" && v < len(r.buf) && r.buf[v] == '[' {
			r.line += r.sc.nl
			r.pos = v + 1
			r.state = stArrayFirst
			return nil, true
		}
		if string(key) == "systemTraceEvents" && v < len(r.buf) && r.buf[v] != '"' {
			r.problemV(r.line+r.sc.nl, KindFraming, Refuses, "", `systemTraceEvents is not a string: Perfetto refuses the whole file; chrome://tracing warns ("Couldn't create an importer for the provided eventData")`)
		}
		k = r.sc.value(v)
		if k > 0 && r.OnMember != nil {
			r.OnMember(key, r.buf[v:k])
		}
	}
	if k < 0 {
		if r.sc.short {
			if r.eof {
				r.problemV(r.line, KindTorn, Refuses, Refuses, "the file ends inside the top-level object, which neither viewer loads cut")
				r.stop()
				return nil, true
			}
			return nil, false
		}
		r.problemV(r.line+bytes.Count(r.buf[i:r.sc.errOff], []byte{'\n'}), KindSyntax, Refuses, Refuses, "invalid JSON: %s", r.sc.errMsg)
		r.stop()
		return nil, true
	}
	r.line += r.sc.nl
	r.pos = k
	r.state = stObjAfter
	return nil, true
}

// sniff checks the start of the file as Perfetto does.
// utf8BOM is the byte order mark some editors put at the start of a file.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

func (r *Reader) sniff() {
	// Perfetto drops the white space of the first bytes, then looks for
	// [{" or {" at their start: a pretty-printed file passes.
	var head [perfettoSniff]byte
	b := head[:0]
	for _, c := range r.buf[r.pos:min(len(r.buf), r.pos+perfettoSniff)] {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			b = append(b, c)
		}
	}
	if len(b) == 0 && len(r.buf) < perfettoSniff || len(b) > 0 && b[0] != '[' && b[0] != '{' {
		return // empty, or not JSON: a framing problem, reported as such
	}
	b = bytes.TrimPrefix(b, []byte{'['})
	if !bytes.HasPrefix(b, []byte(`{"`)) {
		r.problemV(1, KindDetect, ShowsNothing, "", `no [{" in the first %d bytes: Perfetto does not recognise the file as a JSON trace`, perfettoSniff)
	}
}

// finish reports what is wrong with where the input ended.
func (r *Reader) finish() {
	switch r.state {
	case stStart:
		r.problem(r.line, KindFraming, "the file is empty")
	case stArrayFirst, stAfterElem, stAfterComma:
		if r.obj {
			r.problemV(r.line, KindFraming, Refuses, Refuses, `the traceEvents array is not closed: neither viewer loads the {"traceEvents":[ form cut (Perfetto accepts an unterminated array only in the bare [ form; tracer repair closes it)`)
		}
	case stObjFirst, stObjKey, stObjAfter:
		r.problemV(r.line, KindFraming, Refuses, Refuses, "the top-level object is not closed: neither viewer loads it (tracer repair closes it)")
	}
}

// Object reports whether the events are in the object form
// {"traceEvents":[...]}, once the first event was read.
func (r *Reader) Object() bool { return r.obj }

// Unterminated reports whether the input ended inside the bare array,
// with no closing ']', or inside an event: as a crash leaves it.
func (r *Reader) Unterminated() bool {
	return r.torn || !r.obj && (r.state == stArrayFirst || r.state == stAfterElem || r.state == stAfterComma)
}
