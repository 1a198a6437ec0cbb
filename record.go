package tracer

import (
	"math"
	"unsafe"
)

// kind is the Trace Event Format phase an event becomes.
type kind uint8

const (
	kindSpan         kind = iota + 1 // start of a span: becomes X, or B if it stays open
	kindBegin                        // start of a span written as B at once
	kindEnd                          // end of the span whose token is in the head's n
	kindInstant                      // i, scope in the head's flags
	kindCounter                      // C, one series per arg
	kindThreadName                   // M thread_name
	kindThreadSort                   // M thread_sort_index, value in the extra slot
	kindAsyncBegin                   // b, async id in the extra slot
	kindAsyncInstant                 // n
	kindAsyncEnd                     // e
	kindFlowBegin                    // s, flow id in the extra slot
	kindFlowStep                     // t
	kindFlowEnd                      // f, bound to the enclosing slice
	kindAnyBegin                     // start of a SpanHandle, its id in the extra slot: see anyspan.go and openhandles.go
	kindAnyEnd                       // end of a SpanHandle, on any goroutine, its id in the extra slot
)

// hasID reports whether events of kind k carry a number in an extra slot.
func (k kind) hasID() bool { return k == kindThreadSort || k >= kindAsyncBegin }

// maxArgs is the most args an event keeps; later ones are ignored.
const maxArgs = 32

// A slot is the 32-byte unit of the per-P buffers. An event is a run of
// slots, written and published together:
//
//	head   num: clock reading; meta: gid, slot count, flags, kind;
//	       n, p: the name; a span start has its token's index in n's
//	       high 32 bits; an end has no name, and n is its span's token
//	extra  only when the event has an id, a category or a scope:
//	       num: the id; meta: category | scope<<16
//	arg    one per arg: num: the value; meta: its argKind, and whether a
//	       value slot follows; n, p: the key
//	value  only after a non-empty string arg: n, p: the string
//
// So a bare span, a start and an end, takes 64 bytes, and args take room
// only when present. Strings are kept as their data pointer and length: p
// is a real pointer, so the garbage collector keeps the string alive while
// the slot holds it, and the encoder can key its cache of escaped names
// on it.
type slot struct {
	num  uint64
	meta uint64
	n    uint64
	p    *byte
}

// Bits of a head slot's meta.
const (
	metaFlagsShift = 8
	metaSlotsShift = 16
	metaExtra      = 1 << 23
	metaGidShift   = 24
)

// Bits of an arg slot's meta.
const metaHasValue = 1 << 8

func (s *slot) kind() kind     { return kind(s.meta) }
func (s *slot) flags() uint8   { return uint8(s.meta >> metaFlagsShift) }
func (s *slot) slots() uint64  { return s.meta >> metaSlotsShift & 0x7f }
func (s *slot) hasExtra() bool { return s.meta&metaExtra != 0 }
func (s *slot) gid() uint64    { return s.meta >> metaGidShift }
func (s *slot) at() int64 {
	if s.num&rawDone == 0 { // see timebase.fix
		return notYet
	}
	return int64(s.num &^ rawDone)
}
func (s *slot) str() string      { return unsafe.String(s.p, int(uint32(s.n))) }
func (s *slot) argKind() argKind { return argKind(s.meta) }

// setStr keeps v in s: its length in n's low 32 bits (a span start keeps
// its token in the high ones), cut to what fits, which is far more than
// the encoder writes (MaxStringLen).
func (s *slot) setStr(v string) {
	s.n, s.p = uint64(min(len(v), math.MaxUint32)), unsafe.StringData(v)
}

// headMeta packs a head slot's meta. Goroutine ids take the top 40 bits:
// a process would have to start a goroutine every microsecond for 12 days
// to pass them, and the viewers keep only 32 bits of a tid anyway.
func headMeta(k kind, flags uint8, slots uint64, extra bool, gid uint64) uint64 {
	m := uint64(k) | uint64(flags)<<metaFlagsShift | slots<<metaSlotsShift | gid<<metaGidShift
	if extra {
		m |= metaExtra
	}
	return m
}

// catScope is the category and scope of an event, as registry ids, and
// for an async event the track of its operation it is on: 0 for the
// operation's own, or a child's own track (see Async.Begin).
type catScope struct {
	cat, scope uint16
	track      uint32
}

// from returns cs with the category and scope that args set, if any.
func (cs catScope) from(args []Arg) catScope {
	for i := range args {
		switch args[i].kind {
		case argCategory:
			cs.cat = uint16(args[i].num)
		case argScope:
			cs.scope = uint16(args[i].num)
		}
	}
	return cs
}

// argSlots returns the slots args take: one each, one more for a
// non-empty string value, none for Category and Namespace, which the extra
// slot holds, and none for the zero Arg, which is ignored. A Stringer,
// which must be formatted before it is recorded (see formatArgs), sets
// hasStringer in the count, which is then no count of slots.
func argSlots(args []Arg) (n uint64) {
	for i := range args {
		switch args[i].kind {
		case argCategory, argScope, 0:
		case argString:
			n++
			if args[i].str != "" {
				n++
			}
		case argStringer:
			n |= hasStringer
		default:
			n++
		}
	}
	return n
}

// hasStringer is the bit argSlots sets for args that hold a Stringer.
const hasStringer = 1 << 32

// formatArgs returns args with each Stringer replaced by the text its
// String method returns, in buf. It runs on the recording goroutine
// before anything is recorded, with no lock held and pinned to no P: a
// String method may do what any code may do, including record into the
// same tracer, Flush or Close it, or wait. So the tracer never calls user
// code from the encoder (see docs/guarantees.md).
func formatArgs(buf *[maxArgs]Arg, args []Arg) []Arg {
	out := buf[:copy(buf[:], args)]
	for i := range out {
		if a := &out[i]; a.kind == argStringer {
			*a = String(a.key, callString(stringer(a.num, unsafe.StringData(a.str))))
		}
	}
	return out
}

// putArgs writes args into s, which argSlots(args) slots long.
func putArgs(s []slot, args []Arg) {
	i := 0
	for j := range args {
		a := &args[j]
		if a.kind == argCategory || a.kind == argScope || a.kind == 0 {
			continue
		}
		d := &s[i]
		d.num, d.meta = a.num, uint64(a.kind)
		d.setStr(a.key)
		i++
		if a.kind == argString && a.str != "" {
			d.meta |= metaHasValue
			s[i].setStr(a.str)
			i++
		}
	}
}

// putEvent writes a whole event into s, slotsFor long, with head already
// holding its time: the extra slot and the args. It is the slow part of
// record, for events that have more than a head.
func putEvent(s []slot, extra bool, cs catScope, id uint64, args []Arg) {
	i := 1
	if extra {
		s[1] = slot{num: id, meta: uint64(cs.cat) | uint64(cs.scope)<<16 | uint64(cs.track)<<32}
		i = 2
	}
	putArgs(s[i:], args)
}

// flagParent, in the flags of a kindAnyBegin head, says its last slot is
// an argParent slot holding the id of its parent.
const flagParent = 1

// argParent is the kind of the slot that holds a SpanHandle's parent's
// id. It is not an arg: the flusher strips it before it encodes anything.
const argParent argKind = 200

// An event's slots: its head h and the rest, the extra slot (if h has one)
// and the args.

// extra returns the extra slot of the event, or nil.
func extra(h *slot, rest []slot) *slot {
	if h.hasExtra() {
		return &rest[0]
	}
	return nil
}

// args returns the arg slots of the event.
func args(h *slot, rest []slot) []slot {
	if h.hasExtra() {
		return rest[1:]
	}
	return rest
}
