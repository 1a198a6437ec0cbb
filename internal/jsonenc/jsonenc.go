// Package jsonenc appends JSON values to byte slices, the byte-level
// layer of the tracer's encoder and of every other writer of the same
// format in this repository (the Go runtime's view in goruntime): numbers
// written straight into spare capacity, microseconds with three decimals,
// strings escaped into valid UTF-8 whatever they hold. It allocates only
// to grow the slice it is given, and uses nothing of the tracer.
package jsonenc

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// MaxStringLen is the longest string String writes whole; a longer one is
// cut, on a rune boundary, and ends with a marker saying how much was cut.
const MaxStringLen = 4096

// Micros writes a nanosecond count as microseconds with three
// decimals, the precision Perfetto keeps without rounding. Like Uint
// it writes the digits straight into b's spare capacity: formatting into
// a temporary and copying it cost as much again.
func Micros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = -u
	}
	if u < 10_000 { // under 10µs: most spans of a tight loop
		b = grow(b, 5)
		return b[:PutMicros(b[:cap(b)], len(b), uint32(u))]
	}
	us, frac := u/1000, u%1000
	b = Uint(b, us)
	l := len(b)
	b = grow(b, 4)[:l+4]
	d := b[l : l+4 : l+4]
	d[0] = '.'
	d[1] = byte('0' + frac/100)
	r := frac % 100 * 2
	d[2], d[3] = digitPairs[r], digitPairs[r+1]
	return b
}

// Uint appends u in decimal.
func Uint(b []byte, u uint64) []byte {
	if u < 10 { // durations under 10µs, small ids and counts
		return append(b, byte('0'+u))
	}
	n := decimalLen(u)
	l := len(b)
	b = grow(b, n)[:l+n]
	d := b[l : l+n : l+n]
	i := n
	for u >= 100 {
		q := u / 100
		r := (u - q*100) * 2
		i -= 2
		d[i], d[i+1] = digitPairs[r], digitPairs[r+1]
		u = q
	}
	if u >= 10 {
		d[1], d[0] = digitPairs[u*2+1], digitPairs[u*2]
	} else {
		d[0] = byte('0' + u)
	}
	return b
}

// Int appends v in decimal.
func Int(b []byte, v int64) []byte {
	if v < 0 {
		return Uint(append(b, '-'), -uint64(v))
	}
	return Uint(b, uint64(v))
}

// grow returns b with room for n more bytes.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		b = slices.Grow(b, n)
	}
	return b
}

// ShortMax is the most bytes a Short holds.
const ShortMax = 64

// A Short is a piece of JSON of up to ShortMax bytes kept in an array of
// that size, for the pieces an encoder writes again and again: a name with
// the fields around it, a pid and tid, an arg's key. Append copies the
// whole array, which the compiler does with a few vector moves, where
// append of a slice of a few dozen bytes calls memmove and costs several
// times as much. Its zero value holds nothing.
type Short struct {
	b [ShortMax]byte
	n uint8
}

// Set makes s hold p and reports whether it fits; if not, s is unchanged.
func (s *Short) Set(p []byte) bool {
	if len(p) > ShortMax {
		return false
	}
	copy(s.b[:], p)
	s.n = uint8(len(p))
	return true
}

// Len returns how many bytes s holds.
func (s *Short) Len() int { return int(s.n) }

// Append appends what s holds to b.
func (s *Short) Append(b []byte) []byte {
	l := len(b)
	b = grow(b, ShortMax)
	return b[:s.Put(b[:cap(b)], l)]
}

// Put writes what s holds into b at i and returns the index after it. It
// writes the whole array, past the end of what s holds, so b must be at
// least i+ShortMax long; what follows overwrites the extra bytes.
func (s *Short) Put(b []byte, i int) int {
	*(*[ShortMax]byte)(b[i : i+ShortMax]) = s.b
	return i + int(s.n)
}

// decimalLen returns the number of decimal digits of u.
func decimalLen(u uint64) int {
	// bits.Len64 gives log2; 1233/4096 approximates log10(2).
	n := (bits.Len64(u|1) * 1233) >> 12
	if u >= powersOf10[n] {
		n++
	}
	return max(n, 1)
}

var powersOf10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// Float writes f as a JSON number, or as a string for the values JSON
// cannot hold.
func Float(b []byte, f float64) []byte {
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

// String writes s as a JSON string that is valid UTF-8 whatever s
// holds: quotes, backslashes and control characters are escaped, each byte
// of invalid UTF-8 becomes U+FFFD, and strings over MaxStringLen are cut.
func String(b []byte, s string) []byte {
	cut := 0
	if len(s) > MaxStringLen {
		n := MaxStringLen
		// Do not split a rune: back up to the start of one that crosses
		// the limit. Bytes of invalid UTF-8 (each becomes U+FFFD) are cut
		// anywhere: backing up over them all would cut a string of
		// continuation bytes to nothing.
		for k := 1; k < utf8.UTFMax && !utf8.RuneStart(s[n]); k++ {
			if utf8.RuneStart(s[n-k]) {
				if r, size := utf8.DecodeRuneInString(s[n-k:]); (r != utf8.RuneError || size > 1) && size > k {
					n -= k
				}
				break
			}
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

// Duration writes d as a JSON string in the largest unit it has at
// least one of ("1.5ms", "250ns", "-2s"), as time.Duration.String does
// below a minute, without allocating.
func Duration(b []byte, d time.Duration) []byte {
	b = append(b, '"')
	abs := d
	if abs < 0 {
		abs = -abs
	}
	unit, per := "ns", time.Duration(1)
	switch {
	case abs >= time.Second:
		unit, per = "s", time.Second
	case abs >= time.Millisecond:
		unit, per = "ms", time.Millisecond
	case abs >= time.Microsecond:
		unit, per = "µs", time.Microsecond
	}
	b = strconv.AppendFloat(b, float64(d)/float64(per), 'f', -1, 64)
	b = append(b, unit...)
	return append(b, '"')
}

// Timestamps writes what Micros writes, faster for a run of nearby times
// (the events of a flush, whose times differ by microseconds): it keeps
// the digits of the last whole millisecond it wrote, and for a time in
// the same millisecond writes only the six digits after them, with 32-bit
// arithmetic. Its zero value is ready to use.
type Timestamps struct {
	start  uint64 // the first nanosecond of the millisecond digits holds
	digits Short  // its digits; none before the first time written
}

// Append appends ns as Micros does.
func (t *Timestamps) Append(b []byte, ns int64) []byte {
	if ns < 1e6 {
		return Micros(b, ns) // negative, or in the first millisecond: no leading digits to keep
	}
	if rest := uint64(ns) - t.start; rest >= 1e6 || t.digits.n == 0 {
		ms := uint64(ns) / 1e6
		var d [20]byte
		t.digits.Set(Uint(d[:0], ms))
		t.start = ms * 1e6
	}
	b = grow(b, ShortMax+7)
	i, _ := t.Put(b[:cap(b)], len(b), ns)
	return b[:i]
}

// Put writes ns as Append does, into b at i, if ns is in the millisecond
// of the last time written, and returns the index after it; b must have
// ShortMax+7 bytes of room past i. Otherwise it writes nothing and
// returns i, false: Append writes the other times.
func (t *Timestamps) Put(b []byte, i int, ns int64) (int, bool) {
	rest := uint64(ns) - t.start
	if rest >= 1e6 || ns < 1e6 || t.digits.n == 0 {
		return i, false
	}
	i = t.digits.Put(b, i)
	d := b[i : i+7 : i+7]
	r := uint32(rest)
	us, frac := r/1000, r%1000
	d[0] = byte('0' + us/100)
	p := us % 100 * 2
	d[1], d[2] = digitPairs[p], digitPairs[p+1]
	d[3] = '.'
	d[4] = byte('0' + frac/100)
	p = frac % 100 * 2
	d[5], d[6] = digitPairs[p], digitPairs[p+1]
	return i + 7, true
}

// PutMicros writes the nanoseconds ns, 0 <= ns < 10,000, as Micros does,
// into b at i, which must have room for 5 bytes, and returns the index
// after them.
func PutMicros(b []byte, i int, ns uint32) int {
	d := b[i : i+5 : i+5]
	d[0], d[1] = byte('0'+ns/1000), '.'
	frac := ns % 1000
	d[2] = byte('0' + frac/100)
	p := frac % 100 * 2
	d[3], d[4] = digitPairs[p], digitPairs[p+1]
	return i + 5
}
