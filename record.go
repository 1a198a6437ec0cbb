package tracer

import (
	"math"
	"sync"
	"unsafe"

	"go.uber.org/atomic"
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
func (s *slot) setsName() bool { k := s.kind(); return k == kindThreadName || k == kindThreadSort }
func (s *slot) isFlow() bool   { k := s.kind(); return k >= kindFlowBegin && k <= kindFlowEnd }
func (s *slot) gid() uint64    { return s.meta >> metaGidShift }
func (s *slot) at() int64 {
	if s.num&rawDone == 0 { // see timebase.fix
		return notYet
	}
	return int64(s.num &^ rawDone)
}
func (s *slot) str() string { return unsafe.String(s.p, int(uint32(s.n))) }

// asyncEndAt returns the head of an "e" at nanotime at, without args, for
// the async operation whose "b" has head s: see openAsyncs.cut.
func (s *slot) asyncEndAt(at int64) slot {
	e := *s
	e.meta = headMeta(kindAsyncEnd, s.flags(), 2, true, s.gid())
	e.setNanotime(at)
	return e
}

// movedTo returns a copy of the head s at nanotime at: a span's start
// clipped to a tee's window (see teehead.go).
func (s *slot) movedTo(at int64) slot {
	c := *s
	c.setNanotime(at)
	return c
}

// setNanotime replaces the head's clock reading with the nanotime ns it
// stands for: see timebase.fix.
func (s *slot) setNanotime(ns int64) { s.num = uint64(ns) | rawDone }
func (s *slot) argKind() argKind     { return argKind(s.meta) }

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

// The record path.

// A recorder is the record path's state: the chains that recording
// goroutines append to, the pool their chunks come from, and the counts of
// what they could not record. The flusher reads the chains; the record path
// reaches the flusher only through helper, to help it (assist.go).
type recorder struct {
	recording  atomic.Bool                    // false once Close began: events are refused
	categories atomic.Pointer[categoryFilter] // nil: every category is recorded
	lateDrops  atomic.Uint64                  // events refused because the tracer was closed
	dropped    atomic.Uint64                  // events dropped: full buffers on a stalled sink
	refused    atomic.Uint64                  // events and counter series refused: see refuse
	unmatched  atomic.Uint64                  // span ends that ended nothing: see spantoken.go
	refusal    refusal
	kept       keptEnds // span ends that found no room: see keepEnd
	chains     atomic.Pointer[chains]
	chainsMu   sync.Mutex // serialises addChain only
	pool       chunkPool
	waiting    atomic.Int64   // sealed chunks the flusher has not read yet
	wake       chan struct{}  // wakes the flusher when a chunk is sealed
	progress   progressSignal // wakes recording goroutines waiting for room
	own        ownGoroutines  // the goroutines that run user code: see reentry.go
	stop       chan struct{}  // closed when Close begins: no more waiting for room
	lossless   bool           // WithLossless: wait for room however long it takes
	helper     helper         // the flusher, as the record path sees it
}

// chains is the set of per-P chains, indexed by P id. It is replaced, never
// modified, when a P without a chain first records.
type chains []*chain

// nop is what recording calls return when tracing is off.
func nop(...Arg) {}

// record appends one event of goroutine gid, the caller, to the calling
// P's chain. It returns the function that ends a span it started, nop for
// other events it recorded, and nil if it recorded nothing (a disabled
// category, a closed tracer, or a full buffer on a stalled sink, which it
// counts). cs holds the category and scope ids of async and flow events,
// which their handle carries (and whose category was checked when it was
// made); other events take them from their Category and Namespace args, a
// span's end none.
func (r *recorder) record(gid uint64, k kind, flags uint8, cs catScope, name string, id uint64, args []Arg) func(...Arg) {
	n := uint64(1)
	if len(args) > 0 {
		if len(args) > maxArgs {
			args = args[:maxArgs]
		}
		slots := argSlots(args)
		if k < kindAsyncBegin && k != kindEnd {
			// Only args give these events a category: an event
			// without args has nothing to filter.
			if cs = cs.from(args); cs.cat != 0 && !r.allows(cs.cat) {
				r.late() // counted if Close began, whatever its category
				return nil
			}
		}
		if slots&hasStringer != 0 {
			return r.recordFormatted(gid, k, flags, cs, name, id, args)
		}
		n += slots
	}
	extra := cs != (catScope{}) || k.hasID()
	if extra {
		n++
	}
	if n == 1 {
		return r.put(gid, k, flags, name, id, 1, nil)
	}
	return r.put(gid, k, flags, name, id, n, &eventRest{args: args, cs: cs, extra: extra})
}

// recordFormatted is record for an event whose args hold a Stringer: it
// formats them (formatArgs), unless Close began, and records the text. It
// is apart from record so that the array it formats into takes no room
// on record's stack.
//
//go:noinline
func (r *recorder) recordFormatted(gid uint64, k kind, flags uint8, cs catScope, name string, id uint64, args []Arg) func(...Arg) {
	if !r.recording.Load() {
		return r.put(gid, k, flags, name, id, 1, nil) // refused and counted as late
	}
	var buf [maxArgs]Arg
	args = formatArgs(&buf, args)
	n := argSlots(args)
	extra := cs != (catScope{}) || k.hasID()
	if extra {
		n++
	}
	return r.put(gid, k, flags, name, id, n+1, &eventRest{args: args, cs: cs, extra: extra})
}

// An eventRest is what an event holds besides its head: see slot.
type eventRest struct {
	args  []Arg
	cs    catScope
	extra bool
}

// put writes an event of n slots, its head and rest (nil when n is 1),
// into the calling P's chain, and returns what record does; it refuses
// and counts an event once Close began (record does only for one its
// category leaves out, which never gets here). A span's start
// and end without args, the most common events, come here from Span and
// the end function directly: record's longer list of parameters, which
// does not fit the registers, and its checks of args cost a bare Span
// about 12% (BenchmarkSpan/on).
func (r *recorder) put(gid uint64, k kind, flags uint8, name string, id, n uint64, rest *eventRest) func(...Arg) {
	if r.late() {
		return nil
	}
	for {
		p := procPin()
		if ls := *r.chains.Load(); p < len(ls) && ls[p] != nil {
			l := ls[p]
			c := l.cur.Load()
			if h := loadAcquire(&c.head); h+n <= chunkSlots {
				end := nop
				head := &c.slots[h]
				// now(), by hand: two calls are past the inliner's budget.
				if loadAcquire(&counterOn) != 0 {
					head.num = uint64(cputicks())
				} else {
					head.num = uint64(nanotime()) | rawNanotime
				}
				head.meta = headMeta(k, flags, n, rest != nil && rest.extra, gid)
				if k == kindEnd {
					head.n, head.p = id, nil // the token
				} else {
					head.setStr(name)
				}
				if k <= kindBegin {
					var tok uint64
					tok, end = l.take(gid)
					head.n |= tok << 32
				}
				if n > 1 {
					if k == kindEnd {
						putArgs(c.slots[h+1:h+n], rest.args)
					} else {
						putEvent(c.slots[h:h+n], rest.extra, rest.cs, id, rest.args)
					}
				}
				storeRelease(&c.head, h+n)
				procUnpin()
				return end
			}
		}
		procUnpin()
		if k == kindEnd {
			// The slow path of an end: read the clock before refill may
			// wait, in case the end must be kept aside (see keepEnd).
			if at := now(); !r.refill(p, n, true) {
				r.keepEnd(gid, id, at)
				return nil
			}
			continue
		}
		if !r.refill(p, n, false) {
			return nil
		}
	}
}

// prepare readies r for a tracer's recording, before it starts: h is the
// flusher as the record path sees it.
func (r *recorder) prepare(lossless bool, bufferLimit int, categories *categoryFilter, h helper) {
	r.wake = make(chan struct{}, 1)
	r.stop = make(chan struct{})
	r.lossless, r.helper = lossless, h
	r.pool.limit = bufferLimit / chunkBytes
	empty := chains{}
	r.chains.Store(&empty)
	r.categories.Store(categories)
}

// start makes r record events.
func (r *recorder) start() { r.recording.Store(true) }

// stopRecording makes r refuse events, and stops the waits for room:
// Close began.
func (r *recorder) stopRecording() {
	r.recording.Store(false)
	close(r.stop)
}

// setCategories makes r record only the categories f allows (all, if nil).
func (r *recorder) setCategories(f *categoryFilter) { r.categories.Store(f) }

// countLate counts n events recorded too late to be written: after
// Close's last pass.
func (r *recorder) countLate(n uint64) { r.lateDrops.Add(n) }

// endedNothing counts a span's end that the flusher found no start for.
func (r *recorder) endedNothing() { r.unmatched.Inc() }

// late reports whether Close began, counting the event it then refuses.
func (r *recorder) late() bool {
	if r.recording.Load() {
		return false
	}
	r.lateDrops.Inc()
	return true
}

// allows reports whether t records events of category cat. Async and flow
// events are checked once, when their operation or flow begins: every
// later event of it is recorded, so that none is left without its end.
func (r *recorder) allows(cat uint16) bool {
	f := r.categories.Load()
	return f == nil || cat == 0 || f.allows(cat)
}

// refill gives the chain of P p, or of the P the goroutine runs on now, a
// chunk with room for n slots. It runs once per chunk, not pinned, so it
// may take locks, help the flusher and wait. It returns false, having
// counted the drop, if the event cannot be recorded: the buffers are full
// and the sink is stalled (default mode) or the tracer is closing. The
// end of a span is not counted here: keepEnd keeps it, or counts it.
func (r *recorder) refill(p int, n uint64, end bool) bool {
	if ls := *r.chains.Load(); p >= len(ls) || ls[p] == nil {
		r.addChain(p)
		return true
	}
	c := r.pool.get(r.chainCount(), 0, r.helper.sinkBehind())
	if c == nil {
		if c = r.waitForChunk(); c == nil {
			switch {
			case end: // keepEnd keeps it, or counts it
			case r.recording.Load():
				r.dropped.Inc()
			default:
				r.lateDrops.Inc() // Close began while it waited
			}
			return false
		}
	}
	for {
		p := procPin()
		ls := *r.chains.Load()
		if p >= len(ls) || ls[p] == nil {
			procUnpin()
			r.addChain(p)
			continue
		}
		l := ls[p]
		old := l.cur.Load()
		if loadAcquire(&old.head)+n <= chunkSlots {
			// Another goroutine on this P refilled it meanwhile.
			procUnpin()
			r.pool.put(c)
			return true
		}
		l.cur.Store(c)
		if old == full {
			l.first.Store(c)
		} else {
			old.next.Store(c) // seals old: see the ordering note above
		}
		procUnpin()
		if old != full {
			r.sealed(old)
		}
		return true
	}
}
