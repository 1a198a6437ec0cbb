package tracefile

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// A scanner validates one JSON value at a time in b and fills an Event
// from an event object's members. Its methods take the offset of the
// value's first byte and return the offset just past it, or -1 on
// failure: then either short is set (b ends before the value does, so
// more input is needed) or errOff and errMsg say what is wrong.
type scanner struct {
	b     []byte
	nl    int // newlines in the white space crossed
	depth int
	esc   bool // the last string scanned held escapes
	bad   int  // offset of the first invalid UTF-8 byte in a string, or -1
	short bool

	// lenient accepts what Perfetto's parser does and JSON does not: a
	// comma before } or ], a raw control character in a string. fixes
	// says which of them were met.
	lenient bool
	fixes   fixes

	errOff int
	errMsg string

	stack   []byte // nested's, reused
	objects int    // the deepest nesting of objects nested met, since reset
}

func (s *scanner) reset(b []byte) {
	s.b, s.nl, s.depth, s.bad, s.short, s.errMsg, s.fixes, s.objects = b, 0, 0, -1, false, "", 0, 0
}

// fixes are the departures from JSON a lenient scanner met.
type fixes uint8

const (
	fixComma fixes = 1 << iota // a comma before } or ]
	fixCtrl                    // a raw control character in a string
)

// trailing reports, at the offset i just past a comma, whether a lenient
// scanner takes the closing bracket close there, and notes the fix.
func (s *scanner) trailing(i int, close byte) bool {
	if s.lenient && i < len(s.b) && s.b[i] == close {
		s.fixes |= fixComma
		return true
	}
	return false
}

func (s *scanner) fail(i int, format string, args ...any) int {
	s.errOff, s.errMsg = i, fmt.Sprintf(format, args...)
	return -1
}

func (s *scanner) needMore() int {
	s.short = true
	return -1
}

// ws skips white space, counting newlines.
func (s *scanner) ws(i int) int {
	b := s.b
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r':
		case '\n':
			s.nl++
		default:
			return i
		}
		i++
	}
	return i
}

// byteClass sorts the bytes of a string: 0 plain ASCII, 1 quote, 2
// backslash, 3 control character, 4 the start of a multi-byte sequence.
var byteClass = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 3
	}
	t['"'], t['\\'] = 1, 2
	for c := 0x80; c < 0x100; c++ {
		t[c] = 4
	}
	return t
}()

// str scans the string starting with the quote at i.
func (s *scanner) str(i int) int {
	b := s.b
	s.esc = false
	i++
	for {
		// Eight bytes at a time to the first that is not plain ASCII,
		// then byte by byte: most strings are plain names and keys.
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(b) && byteClass[b[i]] == 0 {
			i++
		}
		if i >= len(b) {
			return s.needMore()
		}
		switch byteClass[b[i]] {
		case 1:
			return i + 1
		case 2:
			if i+1 >= len(b) {
				return s.needMore()
			}
			s.esc = true
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= len(b) {
						return s.needMore()
					}
					if !isHex(b[k]) {
						return s.fail(k, "invalid \\u escape in a string")
					}
				}
				i += 6
			default:
				return s.fail(i, "invalid escape \\%s in a string", printable(b[i+1]))
			}
		case 3:
			if s.lenient {
				s.fixes |= fixCtrl
				i++
				continue
			}
			return s.fail(i, "raw control character 0x%02x in a string", b[i])
		case 4:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				if !utf8.FullRune(b[i:]) {
					return s.needMore()
				}
				if s.bad < 0 {
					s.bad = i
				}
			}
			i += size
		}
	}
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special returns a word with the high bit set in the lowest byte of w
// that is a quote, a backslash, a control character or not ASCII (and
// perhaps in higher bytes too: only the lowest set bit is exact).
func special(w uint64) uint64 {
	q := w ^ ('"' * ones)
	bs := w ^ ('\\' * ones)
	return ((q-ones)&^q | (bs-ones)&^bs | (w-0x20*ones)&^w | w) & highs
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// printable shows a byte in an error message.
func printable(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return string(rune(c))
	}
	return fmt.Sprintf("0x%02x", c)
}

// num scans the number starting at i, as JSON's grammar has it.
func (s *scanner) num(i int) int {
	b := s.b
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return s.needMore()
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return s.fail(i, "invalid number %q", b[start:i+1])
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == d {
			if i >= len(b) {
				return s.needMore()
			}
			return s.fail(i, "invalid number: no digit after the decimal point")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == d {
			if i >= len(b) {
				return s.needMore()
			}
			return s.fail(i, "invalid number: no digit in the exponent")
		}
	}
	if i >= len(b) {
		return s.needMore() // the number may go on
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number scans the number at v, as num does, and returns its value times
// 1000 when that is exact and fits an int64: at most 16 digits before the
// point, 3 after, no exponent. Timestamps in microseconds so become exact
// nanoseconds, in one pass.
func (s *scanner) number(v int) (end int, milli int64, ok bool) {
	b := s.b
	i := v
	neg := b[i] == '-'
	if neg {
		i++
	}
	d := i
	var n uint64 // wraps past 19 digits, but then the slow path takes over
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		n = n*10 + uint64(c)
	}
	digits := i - d
	frac := 0
	if i < len(b) && b[i] == '.' {
		i++
		for ; i < len(b); i++ {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			n = n*10 + uint64(c)
			frac++
		}
	}
	if digits == 0 || digits > 16 || frac > 3 || frac == 0 && i > d+digits || i >= len(b) ||
		b[i] == 'e' || b[i] == 'E' || b[d] == '0' && digits > 1 {
		return s.num(v), 0, false // the slow path, which also reports errors
	}
	switch frac {
	case 0:
		n *= 1000
	case 1:
		n *= 100
	case 2:
		n *= 10
	}
	if n > math.MaxInt64 {
		return i, 0, false
	}
	if neg {
		return i, -int64(n), true
	}
	return i, int64(n), true
}

// lit scans true, false or null at i.
func (s *scanner) lit(i int, word string) int {
	for k := 0; k < len(word); k++ {
		if i+k >= len(s.b) {
			return s.needMore()
		}
		if s.b[i+k] != word[k] {
			return s.fail(i, "invalid literal (expected %s)", word)
		}
	}
	return i + len(word)
}

// value scans any JSON value at i, which is not white space.
func (s *scanner) value(i int) int {
	if i >= len(s.b) {
		return s.needMore()
	}
	switch c := s.b[i]; c {
	case '{', '[':
		return s.nested(i)
	}
	return s.scalar(i)
}

// scalar scans the string, number or literal at i.
func (s *scanner) scalar(i int) int {
	switch c := s.b[i]; {
	case c == '"':
		return s.str(i)
	case c == '-' || isDigit(c):
		return s.num(i)
	case c == 't':
		return s.lit(i, "true")
	case c == 'f':
		return s.lit(i, "false")
	case c == 'n':
		return s.lit(i, "null")
	default:
		return s.fail(i, "unexpected %s where a value should be", printable(c))
	}
}

// closer returns the bracket that closes open.
func closer(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

// nested scans the object or array at i, nested to any depth, with a
// stack of its own rather than by recursion: Perfetto reads args of any
// depth, and catapult arrays 11,000 deep (objects, about 7,000: see
// Event.ArgsDepth). It notes the deepest nesting of objects in objects.
func (s *scanner) nested(i int) int {
	b := s.b
	stack := s.stack[:0]
	defer func() { s.stack = stack[:0] }()
	objects := 0
	for {
		// At the first byte of a value.
		after := false
		if c := b[i]; c == '{' || c == '[' {
			stack = append(stack, c)
			if c == '{' {
				objects++
				s.objects = max(s.objects, objects)
			}
			if i = s.ws(i + 1); i >= len(b) {
				return s.needMore()
			}
			switch {
			case b[i] == closer(c):
				stack = stack[:len(stack)-1]
				if c == '{' {
					objects--
				}
				i++
				after = true
			case c == '{':
				if i = s.key(i); i < 0 {
					return i
				}
			}
		} else {
			if i = s.scalar(i); i < 0 {
				return i
			}
			after = true
		}
		for after {
			if len(stack) == 0 {
				return i
			}
			if i = s.ws(i); i >= len(b) {
				return s.needMore()
			}
			top := stack[len(stack)-1]
			switch b[i] {
			case ',':
				if i = s.ws(i + 1); i >= len(b) {
					return s.needMore()
				}
				if s.trailing(i, closer(top)) {
					continue // the lenient scanner's ,} or ,]: b[i] closes it
				}
				if top == '{' {
					if i = s.key(i); i < 0 {
						return i
					}
				}
				after = false
			case closer(top):
				stack = stack[:len(stack)-1]
				if top == '{' {
					objects--
				}
				i++
			default:
				return s.fail(i, "expected , or %c in %s, found %s", closer(top), map[byte]string{'{': "an object", '[': "an array"}[top], printable(b[i]))
			}
		}
		if i >= len(b) {
			return s.needMore()
		}
	}
}

// key scans the member name at i, in an object, and the colon after it,
// and returns the offset of the member's value.
func (s *scanner) key(i int) int {
	b := s.b
	if b[i] != '"' {
		return s.fail(i, "expected a member name in quotes, found %s", printable(b[i]))
	}
	if i = s.str(i); i < 0 {
		return i
	}
	if i = s.ws(i); i >= len(b) {
		return s.needMore()
	}
	if b[i] != ':' {
		return s.fail(i, "expected : after a member name, found %s", printable(b[i]))
	}
	if i = s.ws(i + 1); i >= len(b) {
		return s.needMore()
	}
	return i
}

// object scans the object at i, calling member, if not nil, for each
// member with its key and the offset of its value; member returns the
// offset past the value, having scanned it.
func (s *scanner) object(i int, member func(key []byte, esc bool, v int) int) int {
	s.depth++
	i = s.ws(i + 1)
	if i < len(s.b) && s.b[i] == '}' {
		s.depth--
		return i + 1
	}
	for {
		if i >= len(s.b) {
			return s.needMore()
		}
		if s.b[i] != '"' {
			if s.trailing(i, '}') { // after a comma: {} was taken above
				s.depth--
				return i + 1
			}
			return s.fail(i, "expected a member name in quotes, found %s", printable(s.b[i]))
		}
		k := i
		i = s.str(i)
		if i < 0 {
			return i
		}
		key, esc := s.b[k+1:i-1], s.esc
		i = s.ws(i)
		if i >= len(s.b) {
			return s.needMore()
		}
		if s.b[i] != ':' {
			return s.fail(i, "expected : after a member name, found %s", printable(s.b[i]))
		}
		i = s.ws(i + 1)
		if member != nil {
			i = member(key, esc, i)
		} else {
			i = s.value(i)
		}
		if i < 0 {
			return i
		}
		i = s.ws(i)
		if i >= len(s.b) {
			return s.needMore()
		}
		switch s.b[i] {
		case ',':
			i = s.ws(i + 1)
		case '}':
			s.depth--
			return i + 1
		default:
			return s.fail(i, "expected , or } in an object, found %s", printable(s.b[i]))
		}
	}
}

// event scans the event object at i into e. e.Raw and e.Line are the
// caller's to set. It is object, unrolled for the members of an event:
// this is where the time goes.
func (s *scanner) event(i int, e *Event) int {
	*e = Event{Args: e.Args[:0], BadUTF8: -1}
	start := i
	b := s.b
	s.depth++
	i = s.ws(i + 1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) {
			return s.needMore()
		}
		if b[i] != '"' {
			if s.trailing(i, '}') { // after a comma: {} was taken above
				s.depth--
				if s.bad >= 0 {
					e.BadUTF8 = s.bad - start
				}
				return i + 1
			}
			return s.fail(i, "expected a member name in quotes, found %s", printable(b[i]))
		}
		k := i
		esc := false
		n, code := knownKey(b[i+1:])
		if n > 0 {
			i += n + 2
		} else {
			i = s.str(i)
			if i < 0 {
				return i
			}
			esc = s.esc
			if !esc {
				code = keyCodes[string(b[k+1:i-1])]
			}
		}
		if i < len(b) && b[i] != ':' {
			i = s.ws(i)
		}
		if i >= len(b) {
			return s.needMore()
		}
		if b[i] != ':' {
			return s.fail(i, "expected : after a member name, found %s", printable(b[i]))
		}
		v := i + 1
		if v < len(b) && b[v] <= ' ' {
			v = s.ws(v)
		}
		if v >= len(b) {
			return s.needMore()
		}
		if esc {
			i = s.value(v) // not a member name the viewers know
		} else {
			i = s.member(e, code, v, start)
		}
		if i < 0 {
			return i
		}
		if i < len(b) && b[i] <= ' ' {
			i = s.ws(i)
		}
		if i >= len(b) {
			return s.needMore()
		}
		switch b[i] {
		case ',':
			i++
			if i < len(b) && b[i] <= ' ' {
				i = s.ws(i)
			}
		case '}':
			s.depth--
			if s.bad >= 0 {
				e.BadUTF8 = s.bad - start
			}
			return i + 1
		default:
			return s.fail(i, "expected , or } in an object, found %s", printable(b[i]))
		}
	}
}

// A keyCode names a member of an event the scanner reads.
type keyCode uint8

const (
	keyOther keyCode = iota
	keyPh
	keyName
	keyCat
	keyTS
	keyDur
	keyPid
	keyTid
	keyID
	keyID2
	keyArgs
	keyScope
	keyBP
	keyS
)

var keyCodes = map[string]keyCode{
	"ph": keyPh, "name": keyName, "cat": keyCat, "ts": keyTS, "dur": keyDur, "pid": keyPid, "tid": keyTid,
	"id": keyID, "id2": keyID2, "args": keyArgs, "scope": keyScope, "bp": keyBP, "s": keyS,
}

// A keyWord matches a member name and its closing quote in the first
// eight bytes of the text after the opening quote.
type keyWord struct {
	mask, word uint64
	n          int
	code       keyCode
}

// keyWords holds, by first byte, the usual member names of an event.
var keyWords = func() (t [256][]keyWord) {
	for _, k := range []string{"name", "ph", "ts", "pid", "tid", "dur", "cat", "args", "id", "s"} {
		var w [8]byte
		copy(w[:], k+`"`)
		mask := uint64(1)<<(8*(len(k)+1)) - 1
		t[k[0]] = append(t[k[0]], keyWord{mask, binary.LittleEndian.Uint64(w[:]), len(k), keyCodes[k]})
	}
	return t
}()

// knownKey returns the length of the member name b starts with, closing
// quote excluded, and its code, if it is one of the usual members of an
// event; 0 otherwise. These need no scanning: their bytes are valid as
// they are.
func knownKey(b []byte) (int, keyCode) {
	if len(b) < 8 {
		return 0, keyOther
	}
	w := binary.LittleEndian.Uint64(b)
	for _, k := range keyWords[b[0]] {
		if w&k.mask == k.word {
			return k.n, k.code
		}
	}
	return 0, keyOther
}

// member scans the value at v of the member key of the event that starts
// at start, filling e.
func (s *scanner) member(e *Event, key keyCode, v, start int) int {
	b := s.b
	c := b[v]
	switch key {
	case keyPh:
		if c == '"' {
			n := s.str(v)
			if n > 0 {
				e.Ph, e.PhSpan = b[v+1:n-1], Span{v - start, n - start}
			}
			return n
		}
	case keyName:
		return s.strMember(v, &e.Name)
	case keyCat:
		return s.strMember(v, &e.Cat)
	case keyTS, keyDur:
		if c == '"' {
			// Perfetto reads a string that holds a JSON number as the
			// number; chrome://tracing too (JavaScript converts it).
			n := s.str(v)
			if n > 0 && !s.esc {
				if ns, ok := stringMicros(b[v+1 : n-1]); ok {
					if key == keyTS {
						e.TS, e.HasTS, e.TSSpan = ns, true, Span{v - start, n - start}
					} else {
						e.Dur, e.HasDur, e.DurSpan = ns, true, Span{v - start, n - start}
					}
				}
			}
			return n
		}
		if c == '-' || isDigit(c) {
			n, ns, ok := s.number(v)
			if n > 0 {
				if !ok {
					ns = micros(b[v:n])
				}
				if key == keyTS {
					e.TS, e.HasTS, e.TSSpan = ns, true, Span{v - start, n - start}
				} else {
					e.Dur, e.HasDur, e.DurSpan = ns, true, Span{v - start, n - start}
				}
			}
			return n
		}
	case keyPid, keyTid:
		num := &e.Tid
		if key == keyPid {
			num = &e.Pid
		}
		if c == '-' || isDigit(c) {
			n, milli, ok := s.number(v)
			if n > 0 {
				if ok && milli%1000 == 0 {
					*num = Num{Kind: NumInt, Int: milli / 1000, Raw: b[v:n]}
					num.Bounds = num.Int < 0 || num.Int > math.MaxUint32
				} else {
					*num = s.idNum(v, n)
				}
				if key == keyPid {
					e.PidSpan = Span{v - start, n - start}
				}
			}
			return n
		}
		n := s.value(v)
		if n > 0 {
			*num = s.idNum(v, n)
		}
		return n
	case keyID:
		n := s.value(v)
		if n > 0 && (c == '"' || c == '-' || isDigit(c)) {
			e.ID, e.IDLocal = b[v:n], false
		}
		return n
	case keyScope:
		return s.strMember(v, &e.Scope)
	case keyBP:
		return s.strMember(v, &e.BP)
	case keyS:
		return s.strMember(v, &e.S)
	case keyID2:
		if c == '{' {
			return s.object(v, func(key []byte, esc bool, v int) int {
				n := s.value(v)
				if n > 0 && !esc && (string(key) == "local" || string(key) == "global") {
					e.ID, e.IDLocal = b[v:n], key[0] == 'l'
				}
				return n
			})
		}
	case keyArgs:
		if c == '{' {
			s.objects = 0
			defer func() { e.ArgsDepth = s.objects + 1 }()
			return s.object(v, func(key []byte, esc bool, v int) int {
				n := s.value(v)
				if n > 0 {
					a := Arg{Key: Str{key, esc, true}, Value: b[v:n], Span: Span{v - start, n - start}}
					switch c := b[v]; {
					case c == '-' || isDigit(c):
						a.IsNum = true
					case c == '"':
						a.Str = Str{b[v+1 : n-1], s.esc, true}
					}
					e.Args = append(e.Args, a)
				}
				return n
			})
		}
	}
	return s.value(v)
}

// strMember scans the value at v into str if it is a string.
func (s *scanner) strMember(v int, str *Str) int {
	if s.b[v] != '"' {
		return s.value(v)
	}
	n := s.str(v)
	if n > 0 {
		*str = Str{s.b[v+1 : n-1], s.esc, true}
	}
	return n
}

// idNum reads the pid or tid in b[v:n].
func (s *scanner) idNum(v, n int) Num {
	raw := s.b[v:n]
	switch c := raw[0]; {
	case c == '"':
		return Num{Kind: NumString, Str: raw[1 : len(raw)-1], Raw: raw}
	case c == '-' || isDigit(c):
		num := Num{Kind: NumInt, Raw: raw}
		if i, ok := parseInt(raw); ok {
			num.Int = i
		} else {
			f, _ := strconv.ParseFloat(string(raw), 64)
			num.Frac = f != math.Trunc(f)
			num.Int = int64(max(min(f, math.MaxInt64), math.MinInt64))
			if f > math.MaxInt64 || f < math.MinInt64 {
				num.Bounds = true
			}
		}
		if num.Int < 0 || num.Int > math.MaxUint32 {
			num.Bounds = true
		}
		return num
	}
	return Num{Kind: NumOther, Raw: raw}
}

// parseInt parses a JSON integer of at most 18 digits, the common case,
// without strconv (whose string argument would be allocated).
func parseInt(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// micros converts a JSON number of microseconds to nanoseconds, exactly
// when number can, rounded otherwise; one past the range of an int64 of
// nanoseconds is math.MaxInt64 or math.MinInt64.
func micros(b []byte) int64 {
	s := scanner{b: append(b[:len(b):len(b)], ' ')}
	if _, ns, ok := s.number(0); ok {
		return ns
	}
	f, _ := strconv.ParseFloat(string(b), 64)
	// Clamped: float64(math.MaxInt64) is 2^63, which no int64 holds.
	switch ns := math.Round(f * 1000); {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	default:
		return int64(ns)
	}
}

// stringMicros converts the text of a string that holds a JSON number of
// microseconds to nanoseconds, as micros does; ok is false if the text
// is not a JSON number (Perfetto drops such an event:
// json_tokenizer_failure).
func stringMicros(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	s := scanner{b: append(b[:len(b):len(b)], ' ')}
	if s.num(0) != len(b) {
		return 0, false
	}
	return micros(b), true
}

// fix appends the event raw, which a lenient scanner took, to b as JSON:
// without the commas before } or ], with control characters in strings
// escaped.
func fix(b, raw []byte) []byte {
	in, esc := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case in && esc:
			esc = false
		case in && c == '\\':
			esc = true
		case in && c == '"':
			in = false
		case in && c < 0x20:
			b = append(b, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			continue
		case in:
		case c == '"':
			in = true
		case c == ',':
			j := i + 1
			for j < len(raw) && (raw[j] == ' ' || raw[j] == '\t' || raw[j] == '\r' || raw[j] == '\n') {
				j++
			}
			if j < len(raw) && (raw[j] == '}' || raw[j] == ']') {
				continue
			}
		}
		b = append(b, c)
	}
	return b
}
