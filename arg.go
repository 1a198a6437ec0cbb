package tracer

import (
	"fmt"
	"math"
	"reflect"
	"time"
	"unsafe"
)

// argKind says which field of an Arg holds its value.
type argKind uint8

const (
	argString argKind = iota + 1
	argInt
	argUint
	argFloat
	argBool
	argCategory // not an arg: the event's "cat", see Category
	argScope    // not an arg: an async or flow event's "scope", see Scope
	argDuration // nanoseconds, written as text by the encoder: see Duration
	argTime     // Unix nanoseconds, written as text by the encoder: see Time
	argStringer // a fmt.Stringer, called by the encoder: see Stringer
	argTimeSec  // Unix seconds, for a time UnixNano cannot hold: see Time
)

// An Arg is one key/value pair attached to an event. It appears in the args
// panel of Perfetto and chrome://tracing. Build one with String, Int, Int64,
// Uint64, Float64, Bool, Err, Duration, Time or Stringer; the zero Arg is
// ignored. An event keeps its
// first 32 args: later ones, a Category or Namespace among them, are ignored.
// A key given twice keeps the later value, so an arg given to a span's end
// function replaces one of the same key given at its start: the file never
// holds a key twice in one event's args.
//
// An Arg is a plain value: building one never allocates, and the tracer copies
// it into its buffer, so the caller may reuse or discard it at once.
type Arg struct {
	key  string
	str  string
	num  uint64 // int64, uint64, float64 bits or bool, as kind says
	kind argKind
}

// String returns an Arg holding a string value.
func String(key, value string) Arg { return Arg{key: key, str: value, kind: argString} }

// Int returns an Arg holding an integer value.
func Int(key string, value int) Arg { return Arg{key: key, num: uint64(value), kind: argInt} }

// Int64 returns an Arg holding a 64-bit integer value.
func Int64(key string, value int64) Arg { return Arg{key: key, num: uint64(value), kind: argInt} }

// Uint64 returns an Arg holding an unsigned 64-bit integer value. It is
// written as the integer it is; Perfetto reads integers above
// math.MaxInt64 as negative, so prefer Int64 where values fit. (A counter
// series writes such a value as a float, which both viewers read.)
func Uint64(key string, value uint64) Arg { return Arg{key: key, num: value, kind: argUint} }

// Float64 returns an Arg holding a floating-point value. JSON has no NaN or
// infinity, so those are written as the strings "NaN", "+Inf" and "-Inf".
func Float64(key string, value float64) Arg {
	return Arg{key: key, num: math.Float64bits(value), kind: argFloat}
}

// Bool returns an Arg holding a boolean value.
func Bool(key string, value bool) Arg {
	var n uint64
	if value {
		n = 1
	}
	return Arg{key: key, num: n, kind: argBool}
}

// Err returns an Arg "error" holding err's message, or the zero Arg, which
// is ignored, when err is nil:
//
//	end(tracer.Err(err))
//
// The message is taken when Err is called (err.Error() may allocate).
func Err(err error) Arg {
	if err == nil {
		return Arg{}
	}
	return String("error", err.Error())
}

// Duration returns an Arg holding d, shown as text such as "1.5ms". The
// text is made by the flusher, so recording it costs no formatting.
func Duration(key string, d time.Duration) Arg {
	return Arg{key: key, num: uint64(d), kind: argDuration}
}

// Time returns an Arg holding t, shown as an RFC 3339 time with
// nanoseconds in UTC. The text is made by the flusher. A time before 1678
// or after 2262, which int64 nanoseconds cannot hold (the zero Time among
// them, "0001-01-01T00:00:00Z"), is shown to the second.
func Time(key string, t time.Time) Arg {
	if t.Before(minNanoTime) || t.After(maxNanoTime) {
		return Arg{key: key, num: uint64(t.Unix()), kind: argTimeSec}
	}
	return Arg{key: key, num: uint64(t.UnixNano()), kind: argTime}
}

// minNanoTime and maxNanoTime bound the times UnixNano holds.
var minNanoTime, maxNanoTime = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

// Stringer returns an Arg holding v, shown as the text v.String() returns.
// String is called only if the event is recorded (tracing off, or a
// category filtered out, costs no formatting), when it is recorded, on the
// goroutine that records it, as zap and slog format their values: the text
// is v's at that moment, and String may do anything its caller may,
// record into the same tracer included. A nil v is shown as "<nil>", and
// a String method that panics as the panic's text, the way fmt shows them.
//
// Go allocates when it makes an interface of a value that is not a
// pointer (a struct, a string): pass a pointer to keep Stringer free.
func Stringer(key string, v fmt.Stringer) Arg {
	if v == nil {
		return String(key, "<nil>")
	}
	w := (*iface)(unsafe.Pointer(&v))
	// The method table goes in num, hidden from the garbage collector: it
	// is never freed (the runtime allocates it outside the heap). The value
	// goes in str's data pointer, which keeps it alive.
	return Arg{key: key, num: uint64(uintptr(w.tab)), str: unsafe.String((*byte)(w.data), 0), kind: argStringer}
}

// iface is the layout of a non-empty interface value.
type iface struct {
	tab, data unsafe.Pointer
}

// stringer rebuilds the fmt.Stringer that Stringer took apart: its method
// table from num, its value from p.
func stringer(num uint64, p *byte) fmt.Stringer {
	var v fmt.Stringer
	w := (*iface)(unsafe.Pointer(&v))
	*(*uint64)(unsafe.Pointer(&w.tab)) = num
	w.data = unsafe.Pointer(p)
	return v
}

// callString returns v.String(), or the text fmt shows when it panics: the
// flusher must not die of a caller's String method.
func callString(v fmt.Stringer) (s string) {
	defer func() {
		if r := recover(); r != nil {
			if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
				s = "<nil>" // as fmt shows a nil pointer whose method panics
				return
			}
			s = fmt.Sprintf("%%!v(PANIC=String method: %v)", r)
		}
	}()
	return v.String()
}
