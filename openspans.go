package tracer

import (
	"cmp"
	"fmt"
	"slices"
	"unsafe"
)

// Spans are recorded as two events, a start and an end, and the flusher
// pairs them. Most spans are short and their end is the very next event in
// the same chain, which the flusher pairs on the spot into one X event.
// Other starts wait in their goroutine's stack of open spans here, copied
// out of the chain so their chunk can be reused.
//
// A start older than one flush interval when a flush ends is written as a B
// event right away, so a killed process shows what it was doing; its end
// then becomes an E. Writing B events only for a bottom run of a stack,
// outermost first, keeps the B/E events of a track properly nested in file
// order, which chrome://tracing requires.

// maxOpenSpans bounds the open spans the flusher remembers: a server with a
// million slow requests in flight keeps every one. An open span costs
// about 200 bytes with its token, whether its B event is written or not:
// its start (64), its goroutine's stack (24) and entry in the table (about
// 42 at a million), the token (48: see spantoken.go) and the heap's
// rounding; 184-205 measured in processes of their own, which
// TestMillionOpenSpans holds under 220. Each arg slot takes 32 bytes
// more, so the bound is about 210 MB. A goroutine that exits inside a
// span it never ended leaves the start here for good, and a program that
// does that often would otherwise grow this table without limit. Past the
// bound, the flusher forgets the goroutines whose newest open span is
// oldest (a dead goroutine's only gets older) until a quarter of the table
// is free.
// Each forgotten span is an event that will not be written, its B or its
// E, and is counted in Stats.Forgotten and the tracer.dropped counter;
// its end, should it still come, is counted in Stats.Unmatched.
const maxOpenSpans = 1 << 20

// An openSpan is a started span whose end has not been seen yet. It is
// packed into 64 bytes, a size class of its own, since a server may hold
// a million of them (see maxOpenSpans).
type openSpan struct {
	start   slot
	args    *slot  // the first of its extra and arg slots, nil if none: see rest
	token   uint64 // the spanToken id its end will carry
	batch   uint64 // the write that held its B event
	off     int32  // where in that write (a batch is at most a few hundred KiB)
	nargs   uint8  // how many slots args points to
	written bool   // its B event is in the file
}

// rest returns the span's extra and arg slots, if any.
func (o *openSpan) rest() []slot {
	if o.args == nil {
		return nil
	}
	return unsafe.Slice(o.args, o.nargs)
}

// openSpans holds the open spans of every goroutine that has one.
type openSpans struct {
	stacks map[uint64]*[]openSpan
	count  int           // open spans in all stacks
	free   []*[]openSpan // empty stacks kept for any goroutine: see release
	deep   [4]deepStack  // empty deep stacks kept for their own goroutine
	// The last goroutine looked up: its events tend to come in runs.
	lastGid   uint64
	lastStack *[]openSpan

	forget func(gid uint64) // told of goroutines trim forgot, if not nil

	anys anySpans // the open SpanHandles: see openhandles.go
}

func (o *openSpans) stack(gid uint64, create bool) *[]openSpan {
	if o.lastStack != nil && o.lastGid == gid {
		return o.lastStack
	}
	s := o.stacks[gid]
	if s == nil {
		if !create {
			return nil
		}
		s = o.reuse(gid)
		if o.stacks == nil {
			o.stacks = map[uint64]*[]openSpan{}
		}
		o.stacks[gid] = s
	}
	o.lastGid, o.lastStack = gid, s
	return s
}

// A stack keeps the room it grew to, and a goroutine may hold the stack
// it is given for good: one that exits inside spans it never ends. So an
// empty stack that grew deep (a recursion with a span a level) is kept
// for its own goroutine only, which may well recurse again, never handed
// to another: a goroutine leaking three spans must not keep the room of a
// recursion thousands deep, 64 bytes a level, for good.
const (
	// shallowStack is the most room an empty stack may keep to be given
	// to any goroutine: 4 KiB.
	shallowStack = 64
	// deepStackKept is the most room a deep one may keep for its
	// goroutine: 512 KiB, and o.deep holds four.
	deepStackKept = 8 << 10
)

// A deepStack is an empty stack of more than shallowStack spans' room,
// kept for the goroutine gid that emptied it.
type deepStack struct {
	gid uint64
	s   *[]openSpan
}

// reuse returns an empty stack for goroutine gid: the deep one it left,
// or a shallow one any goroutine left, or a new one.
func (o *openSpans) reuse(gid uint64) *[]openSpan {
	for i := range o.deep {
		if d := &o.deep[i]; d.s != nil && d.gid == gid {
			s := d.s
			*d = deepStack{}
			return s
		}
	}
	if n := len(o.free); n > 0 {
		s := o.free[n-1]
		o.free = o.free[:n-1]
		return s
	}
	return new([]openSpan)
}

// release drops gid's stack once it is empty, so a million short-lived
// goroutines leave nothing behind, and keeps it for reuse (see
// shallowStack).
func (o *openSpans) release(gid uint64, s *[]openSpan) {
	if len(*s) > 0 {
		return
	}
	delete(o.stacks, gid)
	if o.lastStack == s {
		o.lastStack = nil
	}
	switch c := cap(*s); {
	case c <= shallowStack:
		if len(o.free) < 64 {
			o.free = append(o.free, s)
		}
	case c <= deepStackKept:
		// The oldest kept makes room: slots fill from the front.
		copy(o.deep[1:], o.deep[:len(o.deep)-1])
		o.deep[0] = deepStack{gid: gid, s: s}
	}
}

// push records a start whose end is not in sight. An eager start (LongSpan)
// is written as B at once, after the open spans below it.
func (f *flusher) push(h *slot, rest []slot, token uint64) {
	s := f.open.stack(h.gid(), true)
	if len(*s) == 0 && f.shared != nil {
		f.shared.acquire(h.gid(), h.str(), h.at()) // its first open span: it takes a lane
	}
	*s = append(*s, openSpan{start: *h, token: token})
	f.open.count++
	top := &(*s)[len(*s)-1]
	if len(rest) > 0 {
		top.args, top.nargs = &append([]slot(nil), rest...)[0], uint8(len(rest))
	}
	if h.kind() == kindBegin && !f.traits.window {
		f.writeBegins(*s, int64(1)<<62)
	}
}

// writeBegins writes B events for the spans of s that started before
// before, from the bottom up, stopping at the first younger one.
func (f *flusher) writeBegins(s []openSpan, before int64) {
	for i := range s {
		o := &s[i]
		if o.written {
			continue
		}
		if o.start.at() >= before {
			return
		}
		f.writeBegin(o)
	}
}

// writeBegin writes o's B event, and notes where.
func (f *flusher) writeBegin(o *openSpan) {
	seq, off := f.enc.pos()
	o.written, o.batch, o.off = true, seq, int32(off)
	f.enc.begin(&o.start, o.rest())
	if len(f.tees) > 0 {
		f.clipForTees(o.start.gid(), o.token, o.start.at(), off, o.start.at())
	}
}

// writeEnd writes the E event, at time at and with endArgs, of the span
// o, whose B event is written.
func (f *flusher) writeEnd(o *openSpan, endArgs []slot, at int64) {
	if f.shared != nil {
		f.enc.nextOnLane(f.shared.tid(o.start.gid()))
	}
	off := f.enc.size()
	f.enc.end(&o.start, o.rest(), endArgs, at, o.batch, int(o.off))
	if len(f.tees) > 0 {
		f.clipEndForTees(o.start.at(), off, at)
	}
}

// writeComplete writes the span o, whose B event is not written, as an X
// event ending at at, with the args of its start and endArgs.
func (f *flusher) writeComplete(o *openSpan, endArgs []slot, at int64) {
	off := f.enc.size()
	f.enc.complete(&o.start, o.rest(), endArgs, at-o.start.at())
	if len(f.tees) > 0 {
		f.clipForTees(o.start.gid(), o.token, o.start.at(), off, at)
	}
}

// pop pairs an end record, with the args given to the end, with its start. Spans above it in the stack are
// still open: their ends were dropped (full buffers on a stalled sink), or
// they end later, out of order. Either way they cannot be drawn nested in
// the span that ends, so they end with it if their B is already in the
// file (an E without its own end time, but a file whose B and E events
// nest), and are forgotten otherwise, counted in Stats.Forgotten and
// reported once. An end that matches nothing (ended twice, or on another
// goroutine, or after its start was forgotten) is counted in
// Stats.Unmatched.
func (f *flusher) pop(end *slot, endArgs []slot) {
	s := f.open.stack(end.gid(), false)
	if s == nil {
		f.r.endedNothing()
		return
	}
	st := *s
	i := len(st) - 1
	for i >= 0 && st[i].token != end.n {
		i--
	}
	if i < 0 {
		f.r.endedNothing()
		return
	}
	for j := len(st) - 1; j >= i; j-- {
		o := &st[j]
		if o.token&anyMark != 0 { // a SpanHandle, never forgotten: see SpanHandle
			f.endAbove(o, end.at())
			st[j] = openSpan{}
			continue
		}
		switch {
		case o.written && j == i:
			f.writeEnd(o, endArgs, end.at())
		case o.written: // ends with the span below it: the args are not its
			f.writeEnd(o, nil, end.at())
		case j == i:
			f.writeComplete(o, endArgs, end.at())
		default:
			f.forgotten.Inc()
			f.r.refusal.keep(misuseOrder, func() error {
				return fmt.Errorf("tracer: span %q was still open when %q, which began before it on the same goroutine, ended: "+
					"spans end in the reverse order they began, so it was not written (counted in Stats.Forgotten)",
					o.start.str(), st[i].start.str())
			})
		}
		st[j] = openSpan{} // let the strings go
	}
	f.open.count -= len(st) - i
	*s = st[:i]
	f.endWaiting(end.gid(), s, end.at()) // and release s once empty
}

// writeOldBegins writes B events for every span open since before, and
// "b" events for the SpanHandles off their stacks. Like a pass, it queues
// each batch once it is full: a server with a million requests in flight
// would otherwise make one batch of some hundred megabytes, which the
// batch's buffer and the file sink's aligned copy of it would then keep
// for good. It returns false if it needed a batch and got none (see
// startBatch); the next pass goes on from there.
func (f *flusher) writeOldBegins(before int64, block bool) bool {
	for _, s := range f.open.stacks {
		for i := range *s {
			o := &(*s)[i]
			if o.written {
				continue
			}
			if o.start.at() >= before {
				break // from the bottom up: see writeBegins
			}
			if f.full() && !f.nextBatch(block) {
				return false
			}
			f.writeBegin(o)
		}
	}
	return f.writeOldAsyncs(before, block)
}

// A spanSet selects open spans by whether their B event is written.
type spanSet uint8

const (
	allSpans       spanSet = iota
	writtenSpans           // those whose B is in the file
	unwrittenSpans         // those still to be written: as X when they end, or as B once old
)

// appendBegins appends a B event for each open span of set, outermost
// first, without noting anything: for a flight recording (see snapshot)
// and a tee's head and end (see teehead.go). Each begins at startOf its
// token and start, if startOf is not nil.
func (o *openSpans) appendBegins(enc *encoder, set spanSet, startOf func(gid, token uint64, start int64) int64) {
	for _, s := range o.stacks {
		for i := range *s {
			sp := &(*s)[i]
			if set != allSpans && sp.written != (set == writtenSpans) {
				continue
			}
			if startOf == nil {
				enc.begin(&sp.start, sp.rest())
				continue
			}
			b := sp.start.movedTo(startOf(sp.start.gid(), sp.token, sp.start.at()))
			enc.begin(&b, sp.rest())
		}
	}
}

// reopen appends again, at the top of a new file, the B event of each
// open span whose B event is in an earlier file, outermost first, and
// notes where it now is, so that a failed write of the new file's head
// unwrites it like any other (see unwrite): an E in the new file must
// find its B there. It notes where the earlier copy is too: should the
// new file be refused (a full disk), the file that goes on must hold one
// copy (see failures.refused).
func (o *openSpans) reopen(enc *encoder) {
	for _, s := range o.stacks {
		for i := range *s {
			if sp := &(*s)[i]; sp.written {
				seq, off := enc.pos()
				was, wasOff := sp.batch, int(sp.off)
				sp.batch, sp.off = seq, int32(off)
				enc.begin(&sp.start, sp.rest())
				enc.noteRepeat(off, was, wasOff)
			}
		}
	}
	o.anys.reopenAsyncs(enc)
}

// unwrite forgets the B events that a failed write lost, so that they are
// written again (or their spans become X events): an E without its B
// breaks chrome://tracing. B events are written bottom up, so the spans it
// marks are still a top run of their stack.
func (o *openSpans) unwrite(fl failure) {
	o.anys.unwriteAsyncs(fl)
	for _, s := range o.stacks {
		for i := range *s {
			if sp := &(*s)[i]; sp.written && sp.batch == fl.seq && int(sp.off) >= fl.delivered {
				sp.written = false
			}
		}
	}
}

// trim forgets goroutines' open spans, those whose newest span is oldest
// first, while more than max are open, and returns how many it forgot;
// see maxOpenSpans. It gives their tokens back to r.
func (o *openSpans) trim(r *recorder, max int) (forgotten int) {
	if o.count <= max {
		return 0
	}
	type stackAge struct {
		gid    uint64
		newest int64
	}
	ages := make([]stackAge, 0, len(o.stacks))
	for gid, s := range o.stacks {
		ages = append(ages, stackAge{gid, (*s)[len(*s)-1].start.at()})
	}
	slices.SortFunc(ages, func(a, b stackAge) int { return cmp.Compare(a.newest, b.newest) })
	for _, a := range ages {
		if o.count <= max-max/4 {
			break
		}
		s := o.stacks[a.gid]
		for i := range *s {
			if tok := (*s)[i].token; tok&anyMark != 0 {
				delete(o.anys.open, tok&^anyMark) // its end is unmatched
			} else {
				r.release(tok, a.gid)
			}
		}
		o.count -= len(*s)
		forgotten += len(*s)
		clear(*s) // let the strings go
		*s = (*s)[:0]
		o.release(a.gid, s)
		if o.forget != nil {
			o.forget(a.gid)
		}
	}
	return forgotten
}

// reportNeverEnded keeps, for the error handler, a word on the spans still
// open at Close: they are written with no end, so both viewers draw them
// to the end of the trace.
func (f *flusher) reportNeverEnded() {
	if f.open.count == 0 {
		return
	}
	var name string
	var gid uint64
	for g, s := range f.open.stacks {
		if len(*s) > 0 {
			name, gid = (*s)[0].start.str(), g
			break
		}
	}
	f.r.refusal.keep(misuseNeverEnded, func() error {
		what := fmt.Sprintf("%d spans were", f.open.count)
		if f.open.count == 1 {
			what = "1 span was"
		}
		return fmt.Errorf("tracer: %s still open at Close, among them %q on goroutine %d: "+
			"written with their start and no end, they last to the end of the trace "+
			"(an end function not called, or Close while they ran)", what, name, gid)
	})
}

// takeKeptEnds moves the ends kept aside so far to f.kept, in time order.
// The flusher calls it after reading a pass's cut: an end kept after that
// belongs to a goroutine whose later events are all after the cut.
//
// An end can be stamped after the cut and kept before this runs (the
// flusher's thread preempted in between, while a goroutine found the
// buffers full): its counter reading is past the newest anchor, so fix
// leaves it for a later pass and it sorts last. Each pass tries such ends
// again until they convert, whether or not new ones were kept: left as
// they are, one would wait for another end to be kept, which on a sink
// that recovered never comes, and its span would last to Close.
func (f *flusher) takeKeptEnds() {
	n := len(f.kept)
	if f.kept = f.r.kept.take(f.kept); len(f.kept) == n && (n == 0 || f.kept[n-1].at() != notYet) {
		return
	}
	for i := range f.kept { // those kept in earlier passes too: see timebase.fix
		f.clock.fix(&f.kept[i])
	}
	slices.SortStableFunc(f.kept, func(a, b slot) int {
		switch {
		case a.at() < b.at():
			return -1
		case a.at() > b.at():
			return 1
		}
		return 0
	})
}

// popKeptEnds pairs the ends kept aside that happened before before with
// their starts.
func (f *flusher) popKeptEnds(before int64) {
	i := 0
	for ; i < len(f.kept) && f.kept[i].at() < before; i++ {
		f.pop(&f.kept[i], nil)
	}
	if i > 0 {
		n := copy(f.kept, f.kept[i:])
		clear(f.kept[n:])
		f.kept = f.kept[:n]
	}
}

// lateKeptEnds counts, once Close's last pass is done, the ends kept aside
// too late for it.
func (f *flusher) lateKeptEnds() {
	f.r.countLate(uint64(f.r.kept.drop() + len(f.kept)))
	f.kept = nil
}
