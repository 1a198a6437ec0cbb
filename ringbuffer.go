package tracer

import (
	"sync/atomic"
	_ "unsafe" // for go:linkname

	uatomic "go.uber.org/atomic"
)

// Pinning the goroutine to its P makes the running goroutine the only writer
// of that P's ring for the few nanoseconds of a write: the scheduler cannot
// preempt a pinned goroutine, so no other goroutine runs on that P until it
// unpins. The runtime keeps these two symbols reachable for sync.Pool-style
// users and promises not to change their signatures.

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// kind is the Trace Event Format phase a record becomes.
type kind uint8

const (
	kindSpan         kind = iota + 1 // start of a span: becomes X, or B if it stays open
	kindBegin                        // start of a span written as B at once
	kindEnd                          // end of the span whose token is in id
	kindInstant                      // i, scope in record.flags
	kindCounter                      // C, one series per arg
	kindThreadName                   // M thread_name
	kindThreadSort                   // M thread_sort_index, value in id
	kindAsyncBegin                   // b, async id in id
	kindAsyncInstant                 // n
	kindAsyncEnd                     // e
	kindFlowStart                    // s, flow id in id
	kindFlowStep                     // t
	kindFlowEnd                      // f, bound to the enclosing slice
	kindArgs                         // continuation: more args of the record before it
)

// inlineArgs is how many args a record holds itself. Events with more args
// use continuation records in the following slots, up to maxArgs in all.
const (
	inlineArgs = 4
	maxArgs    = 32
)

// A record is one event as the recording goroutine left it: fixed size, no
// interface or pointer besides the strings, so writing it costs a handful of
// stores and the flusher encodes it without reflection.
type record struct {
	at    int64  // clock reading when written: the event time; each ring is sorted by it
	gid   uint64 // goroutine id: the event's track
	id    uint64 // kind-specific number (sort index, async or flow id)
	name  string
	kind  kind
	flags uint8  // instant scope
	nargs uint8  // args of the whole event, inline and in continuations
	cat   uint16 // category id, 0 for none
	scope uint16 // async/flow scope id, 0 for none
	args  [inlineArgs]Arg
}

// catScope is the category and scope of an event, as registry ids.
type catScope struct{ cat, scope uint16 }

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

// slotsFor returns how many ring slots an event with n args occupies.
func slotsFor(n int) uint64 {
	if n <= inlineArgs {
		return 1
	}
	return uint64(n+inlineArgs-1) / inlineArgs
}

// A ring is a single-producer, single-consumer queue of records belonging to
// one P. The producer is whichever goroutine is pinned to that P; the
// consumer is the flusher.
//
// Memory ordering: the producer fills slots [head, head+n) and then stores
// head+n with storeRelease; the consumer loads head atomically before it
// reads any slot below it. That store/load pair on head is the
// release/acquire edge that makes the slot contents visible to the flusher.
// head is a plain uint64 rather than an atomic type because storeRelease
// needs its address. In the other direction the consumer
// stores tail only after it has encoded the slots below it, and the producer
// loads tail before reusing them, so a slot is never overwritten while it is
// read. Successive producers on one P see each other's head: they run on
// the same thread, or the P passed between threads through the runtime's
// locked instructions; under the race detector storeRelease is an atomic
// store, which is also what tells it about the hand-off. The flusher reads
// a slot only between tail and the head it loaded, and keeps no pointer
// into the ring once it stores tail: what it needs later (open span
// starts, records split by the ring's end) it copies.
type ring struct {
	head uint64 // next slot to write; written by the producer only
	_    [56]byte
	tail uatomic.Uint64 // next slot to read; written by the consumer only
	_    [56]byte       // keep head and tail on separate cache lines

	dropped uatomic.Uint64 // events refused because the ring was full
	mask    uint64
	buf     []record

	// ends[i] is the function Span returns for a span whose start record
	// sits in slot i. It is made once, with the ring, so handing it out
	// allocates nothing, and it tells the flusher which start it ends: the
	// record of an end carries the token of slot i in record.id.
	ends   []func()
	tokens []spanToken
}

// A spanToken names the slot that holds a span's start record.
type spanToken struct {
	t  *Tracer
	id uint64 // ring index << 32 | slot index
}

// end records the end of the span that started in the token's slot.
func (s *spanToken) end() { s.t.record(kindEnd, 0, catScope{}, "", s.id, nil) }

func newRing(t *Tracer, p, size int) *ring {
	r := &ring{
		mask:   uint64(size - 1),
		buf:    make([]record, size),
		ends:   make([]func(), size),
		tokens: make([]spanToken, size),
	}
	for i := range r.tokens {
		r.tokens[i] = spanToken{t: t, id: uint64(p)<<32 | uint64(i)}
		r.ends[i] = r.tokens[i].end
	}
	return r
}

// len returns how many records wait to be flushed.
func (r *ring) len() uint64 { return r.loadHead() - r.tail.Load() }

// loadHead is the consumer's acquire load of head.
func (r *ring) loadHead() uint64 { return atomic.LoadUint64(&r.head) }

// rings is the set of per-P rings, indexed by P id. It is replaced, never
// modified, when a P without a ring first records.
type rings []*ring

// record appends one event to the calling P's ring, or counts it as dropped
// when the ring is full. It returns the function that ends a span started
// in the slot it used, or nil if it recorded nothing. cs holds the
// category and scope ids of events whose handle carries them (async and
// flow); Category and Scope args override them.
func (t *Tracer) record(k kind, flags uint8, cs catScope, name string, id uint64, args []Arg) func() {
	if !t.recording.Load() {
		t.lateDrops.Inc()
		return nil
	}
	if len(args) > maxArgs {
		args = args[:maxArgs]
	}
	cs = cs.from(args)
	if f := t.categories.Load(); f != nil && cs.cat != 0 && !f.allows(cs.cat) {
		return nil
	}
	n := slotsFor(len(args))
	gid := goroutineID()
	for {
		p := procPin()
		rs := *t.rings.Load()
		if p >= len(rs) || rs[p] == nil {
			procUnpin()
			t.addRing(p)
			continue
		}
		r := rs[p]
		h := r.loadHead()
		if h+n-r.tail.Load() > uint64(len(r.buf)) {
			r.dropped.Inc()
			procUnpin()
			return nil
		}
		at := nanotime()
		rec := &r.buf[h&r.mask]
		rec.at, rec.gid, rec.id = at, gid, id
		rec.name, rec.kind, rec.flags, rec.nargs = name, k, flags, uint8(len(args))
		rec.cat, rec.scope = cs.cat, cs.scope
		i := copy(rec.args[:], args)
		for s := uint64(1); s < n; s++ {
			rec = &r.buf[(h+s)&r.mask]
			rec.at, rec.kind = at, kindArgs
			i += copy(rec.args[:], args[i:])
		}
		storeRelease(&r.head, h+n)
		procUnpin()
		return r.ends[h&r.mask]
	}
}

// addRing gives P p a ring. It runs once per P for the tracer's life, so
// a mutex is fine here; the record path never takes it.
func (t *Tracer) addRing(p int) {
	t.ringsMu.Lock()
	defer t.ringsMu.Unlock()
	old := *t.rings.Load()
	if p < len(old) && old[p] != nil {
		return
	}
	grown := make(rings, max(len(old), p+1))
	copy(grown, old)
	grown[p] = newRing(t, p, t.opts.bufferSize)
	t.rings.Store(&grown)
}
