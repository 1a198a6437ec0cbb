package tracer

// The flusher's side of SpanHandles (anyspan.go).
//
// A SpanHandle's start goes on its goroutine's stack of open spans like a
// Span's, with its id and anyMark as its token, which no Span token has;
// its end, from any goroutine, carries the id. anySpans says where each
// open SpanHandle is: on which stack, or off every stack, waiting for its
// end to be written as an async slice.

// anyMark marks the token of a SpanHandle in a stack of open spans.
const anyMark = 1 << 63

// An anyState is what the flusher knows of an open SpanHandle.
type anyState struct {
	gid        uint64 // the goroutine it started on
	startAt    int64  // when it started
	parentGid  uint64 // the goroutine whose stack held its parent when it started, 0 if none
	parentAt   int64  // when its parent started
	async      bool   // off its stack: it is drawn as an async slice
	written    bool   // async: its "b" is in the file
	ended      bool   // its B is in the file and it ended under open spans: its E waits for them
	drawn      bool   // it ended with a span below it: its own end is ignored
	enclosed   bool   // a Span was open below it on its stack when it started: see flowFromParent
	lane       uint64 // with lanes, the lane its goroutine held when it started (its flow ends there)
	parentLane uint64 // with lanes, its parent's lane (its flow starts there)
	endArgs    []slot // the args of its end, while ended
	start      slot   // async: its start, and its extra and arg slots
	rest       []slot
	batch      uint64 // async: the write that held its b
	off        int    // where in that write

	// The flow from a parent on another goroutine starts in the parent's
	// slice on its track: it can be drawn only if the parent is drawn
	// there, which is known once its B is written, it ends on its stack
	// (drawnOnTrack), or it goes off its stack (drawnAsync).
	parentID uint64        // the parent, if it has one on another goroutine
	drawing  drawing       // how it is drawn, once that is known
	children int           // children on other goroutines not ended yet
	flows    []pendingFlow // the flows of ended children, until drawing is known
}

// A drawing says how a SpanHandle is drawn, once it is known.
type drawing uint8

const (
	drawingUnknown drawing = iota
	drawnOnTrack           // a slice on its goroutine's track: a flow may start in it
	drawnAsync             // an async slice: no flow can start in it
)

// A pendingFlow is the flow from a SpanHandle to a child that ended before
// the SpanHandle's drawing was known.
type pendingFlow struct {
	start            slot
	rest             []slot
	gid              uint64
	parentGid        uint64
	parentID         uint64
	parentAt         int64
	lane, parentLane uint64
}

// anySpans holds the open SpanHandles, by id.
type anySpans struct {
	open   map[uint64]*anyState
	asyncs map[uint64]*anyState // those off their stack whose end has not come
	free   []*anyState          // for reuse: a busy program starts one a request
	gone   map[uint64]*goneParent
}

// A goneParent is a SpanHandle that ended with children on other
// goroutines still open: how it was drawn, until they end.
type goneParent struct {
	drawing  drawing
	children int
}

// done forgets the SpanHandle id, whose end came, but for how it was
// drawn while children on other goroutines are open.
func (a *anySpans) done(id uint64, st *anyState) {
	if st.children > 0 {
		if a.gone == nil {
			a.gone = map[uint64]*goneParent{}
		}
		a.gone[id] = &goneParent{drawing: st.drawing, children: st.children}
	}
	delete(a.open, id)
	if st.async {
		delete(a.asyncs, id)
	}
	if len(a.free) < 1024 {
		*st = anyState{}
		a.free = append(a.free, st)
	}
}

// pushAny puts a SpanHandle's start on its goroutine's stack.
func (f *flusher) pushAny(h *slot, rest []slot) {
	a := &f.open.anys
	if a.open == nil {
		a.open, a.asyncs = map[uint64]*anyState{}, map[uint64]*anyState{}
	}
	id := rest[0].num
	var st *anyState
	if n := len(a.free); n > 0 {
		st, a.free = a.free[n-1], a.free[:n-1]
	} else {
		st = new(anyState)
	}
	st.gid, st.startAt, st.enclosed = h.gid(), h.at(), false
	if s := f.open.stack(h.gid(), false); s != nil {
		for i := range *s {
			st.enclosed = st.enclosed || (*s)[i].token&anyMark == 0
		}
	}
	if h.flags()&flagParent != 0 {
		parent := rest[len(rest)-1].num
		rest = rest[:len(rest)-1]
		if ps := a.open[parent]; ps != nil && !ps.async && !ps.drawn && !ps.ended {
			st.parentGid, st.parentAt, st.parentLane = ps.gid, ps.startAt, ps.lane
			if ps.gid != st.gid {
				st.parentID = parent
				ps.children++
			}
		}
	}
	a.open[id] = st
	f.push(h, rest, anyMark|id)
	if f.shared != nil {
		// The lane its goroutine holds from now until its last open span
		// ends: a flow written later, when the goroutine may hold
		// another, must be drawn on this one.
		st.lane = f.shared.tid(h.gid())
	}
}

// popAny pairs a SpanHandle's end with its start: see SpanHandle for how
// it is drawn.
func (f *flusher) popAny(end *slot, rest []slot) {
	a := &f.open.anys
	id, endArgs, at := rest[0].num, rest[1:], end.at()
	st := a.open[id]
	if st == nil { // ended twice, or forgotten (see maxOpenSpans)
		f.r.endedNothing()
		return
	}
	if st.drawn {
		a.done(id, st)
		return
	}
	if st.async {
		f.writeAsync(id, st, &st.start, st.rest, endArgs, at)
		a.done(id, st)
		return
	}
	s := f.open.stack(st.gid, false)
	var ss []openSpan
	if s != nil {
		ss = *s
	}
	i := len(ss) - 1
	for i >= 0 && ss[i].token != anyMark|id {
		i--
	}
	if i < 0 { // cannot happen: an open SpanHandle not async is on its stack
		a.done(id, st)
		f.r.endedNothing()
		return
	}
	o := &ss[i]
	onlyHandles := true // above it on the stack
	for j := i + 1; j < len(ss); j++ {
		onlyHandles = onlyHandles && ss[j].token&anyMark != 0
	}
	switch {
	case onlyHandles && (end.gid() == st.gid || o.written):
		// SpanHandles still open above it cross its end: they leave the
		// stack (or end with it, once their B is written), as they do
		// when a Span below them ends.
		for j := len(ss) - 1; j > i; j-- {
			f.endAbove(&ss[j], at)
			ss[j] = openSpan{}
		}
		if o.written {
			f.writeEnd(o, endArgs, at)
		} else {
			f.writeComplete(o, endArgs, at)
		}
		f.drawnAs(st, drawnOnTrack)
		f.flowFromParent(st, &o.start, o.rest(), true)
		gid := st.gid // done gives st back for reuse
		a.done(id, st)
		ss[i] = openSpan{}
		*s = ss[:i]
		f.open.count -= len(ss) - i
		f.endWaiting(gid, s, at)
	case o.written:
		f.drawnAs(st, drawnOnTrack)
		st.ended = true
		if len(endArgs) > 0 {
			st.endArgs = append([]slot(nil), endArgs...) // the chain reuses its chunk
		}
	default:
		start, r := o.start, o.rest()
		copy(ss[i:], ss[i+1:])
		ss[len(ss)-1] = openSpan{}
		*s = ss[:len(ss)-1]
		f.open.count--
		f.endWaiting(st.gid, s, at)
		f.writeAsync(id, st, &start, r, endArgs, at)
		a.done(id, st)
	}
}

// endWaiting writes, at time at, the E events of the SpanHandles on top of
// goroutine gid's stack s that ended while spans inside them were open,
// and lets the stack go once it is empty.
func (f *flusher) endWaiting(gid uint64, s *[]openSpan, at int64) {
	for ss := *s; len(ss) > 0; ss = *s {
		o := &ss[len(ss)-1]
		if o.token&anyMark == 0 {
			break
		}
		id := o.token &^ anyMark
		st := f.open.anys.open[id]
		if st == nil || !st.ended {
			break
		}
		if o.written {
			f.writeEnd(o, st.endArgs, at)
		} else { // its B was lost in a failed write
			f.writeComplete(o, st.endArgs, at)
		}
		f.open.anys.done(id, st)
		ss[len(ss)-1] = openSpan{}
		*s = ss[:len(ss)-1]
		f.open.count--
	}
	if len(*s) == 0 && f.shared != nil {
		f.shared.release(gid, at) // its last open span ended
	}
	f.open.release(gid, s)
}

// endAbove handles a SpanHandle o still open above a span that ends at
// at on the same goroutine (see pop). One whose B is in the file ends
// with it, as a Span does; one whose B is not goes off the stack, to be
// drawn as an async slice when it ends.
func (f *flusher) endAbove(o *openSpan, at int64) {
	id := o.token &^ anyMark
	st := f.open.anys.open[id]
	if st == nil {
		return
	}
	if o.written {
		f.writeEnd(o, st.endArgs, at)
		f.drawnAs(st, drawnOnTrack)
		if st.ended {
			f.open.anys.done(id, st)
		} else {
			st.drawn = true
		}
		return
	}
	st.async, st.start, st.rest = true, o.start, o.rest()
	f.drawnAs(st, drawnAsync)
	f.open.anys.asyncs[id] = st
}

// writeAsync writes the SpanHandle id that started with start as an
// async slice ending at at, and the flow from its parent.
func (f *flusher) writeAsync(id uint64, st *anyState, start *slot, rest, endArgs []slot, at int64) {
	f.drawnAs(st, drawnAsync)
	if !st.written {
		f.writeAsyncBegin(id, start, rest)
	}
	// The e is not written again should its write fail, as an Async's
	// is not: the viewers draw the slice to the end of the trace.
	off := f.enc.size()
	f.enc.anyAsync(start, rest, endArgs, 'e', at)
	if len(f.tees) > 0 {
		f.clipEndForTees(start.at(), off, at)
	}
	f.flowFromParent(st, start, rest, st.enclosed)
}

// writeAsyncBegin writes the "b" of the SpanHandle id that started with
// start, drawn as an async slice.
func (f *flusher) writeAsyncBegin(id uint64, start *slot, rest []slot) {
	off := f.enc.size()
	f.enc.anyAsync(start, rest, nil, 'b', start.at())
	if len(f.tees) > 0 {
		f.clipForTees(0, anyMark|id, start.at(), off, start.at())
	}
}

// writeOldAsyncs writes the "b" of the SpanHandles off their stacks that
// started before before, so that a crash shows them, queueing each full
// batch; it returns false if it needed a batch and got none.
func (f *flusher) writeOldAsyncs(before int64, block bool) bool {
	for id, st := range f.open.anys.asyncs {
		if !st.written && st.start.at() < before {
			if f.full() && !f.nextBatch(block) {
				return false
			}
			st.written = true
			st.batch, st.off = f.enc.pos()
			f.writeAsyncBegin(id, &st.start, st.rest)
		}
	}
	return true
}

// unwriteAsyncs forgets the "b" events of SpanHandles off their stacks
// that the failed write fl lost, so that they are written again.
func (a *anySpans) unwriteAsyncs(fl failure) {
	for _, st := range a.asyncs {
		if st.written && st.batch == fl.seq && st.off >= fl.delivered {
			st.written = false
		}
	}
}

// appendAsyncs appends, after appendBegins' B events, a "b" and an "e"
// event (now) for every SpanHandle off its stack whose end has not come:
// a flight recording ends the async operations still open.
func (a *anySpans) appendAsyncs(enc *encoder) {
	at := nanotime()
	for _, st := range a.asyncs {
		enc.anyAsync(&st.start, st.rest, nil, 'b', st.start.at())
		enc.anyAsync(&st.start, st.rest, nil, 'e', at)
	}
}

// appendWrittenAsyncs appends the "b" event of each SpanHandle off its
// stack whose "b" is written and whose end has not come, at startOf its
// token and start, without noting anything: the head of a tee's trace
// (see teehead.go).
func (a *anySpans) appendWrittenAsyncs(enc *encoder, startOf func(gid, token uint64, start int64) int64) {
	for id, st := range a.asyncs {
		if st.written {
			b := st.start.movedTo(startOf(0, anyMark|id, st.start.at()))
			enc.anyAsync(&b, st.rest, nil, 'b', b.at())
		}
	}
}

// endAsyncs appends, at the end of a tee's trace, an "e" at nanotime at
// for each SpanHandle off its stack whose end has not come, after its
// "b" (at startOf its token and start) if that is still to be written.
func (a *anySpans) endAsyncs(enc *encoder, at int64, startOf func(gid, token uint64, start int64) int64) {
	for id, st := range a.asyncs {
		if !st.written {
			b := st.start.movedTo(startOf(0, anyMark|id, st.start.at()))
			enc.anyAsync(&b, st.rest, nil, 'b', b.at())
		}
		enc.anyAsync(&st.start, st.rest, nil, 'e', at)
	}
}

// reopenAsyncs appends, after reopen's B events, the "b" event of each
// SpanHandle off its stack whose "b" is in an earlier file and whose end
// has not come, so that its "e" has its "b" in the file it is in, and
// notes where it now is (see reopen).
func (a *anySpans) reopenAsyncs(enc *encoder) {
	for _, st := range a.asyncs {
		if st.written {
			was, wasOff := st.batch, st.off
			st.batch, st.off = enc.pos()
			enc.anyAsync(&st.start, st.rest, nil, 'b', st.start.at())
			enc.noteRepeat(st.off, was, wasOff)
		}
	}
}

// cutAsyncs appends, at the end of a file that rotation ends, an "e" at
// nanotime at for each SpanHandle off its stack whose "b" is written and
// whose end has not come: see openAsyncs.cut.
func (a *anySpans) cutAsyncs(enc *encoder, at int64) {
	for _, st := range a.asyncs {
		if st.written {
			enc.anyAsync(&st.start, st.rest, nil, 'e', at)
		}
	}
}

// flowFromParent writes the flow arrow from a SpanHandle's parent, if it
// has one on another goroutine's track: see SpanHandle. The arrow starts
// in the parent's slice on its track, so it is written once the parent is
// known to be drawn there, and left out if the parent is drawn as an
// async slice (Perfetto reports a flow start in no slice). It ends in the
// slice on the SpanHandle's track at its start: its own, or, for one
// drawn as an async slice, the Span it started in; land is false if
// there is none, and the arrow is left out too (Perfetto reports a flow
// end in no slice, catapult flow_slice_end_error).
func (f *flusher) flowFromParent(st *anyState, start *slot, rest []slot, land bool) {
	if st.parentGid == 0 || st.parentGid == st.gid {
		return
	}
	a := &f.open.anys
	d := drawnOnTrack // a parent forgotten meanwhile: as before
	if ps := a.open[st.parentID]; ps != nil {
		ps.children--
		d = ps.drawing
		if d == drawingUnknown && f.written(ps, st.parentID) {
			d = drawnOnTrack // its B is in the file: it stays on its track
		}
		if d == drawingUnknown {
			if land {
				ps.flows = append(ps.flows, pendingFlow{start: *start, rest: append([]slot(nil), rest...),
					gid: st.gid, parentGid: st.parentGid, parentID: st.parentID, parentAt: st.parentAt, lane: st.lane, parentLane: st.parentLane})
			}
			return
		}
	} else if g := a.gone[st.parentID]; g != nil {
		d = g.drawing
		if g.children--; g.children == 0 {
			delete(a.gone, st.parentID)
		}
	}
	if d == drawnOnTrack && land {
		f.writeFlow(start, rest, st.gid, st.parentGid, st.parentID, st.parentAt, st.lane, st.parentLane)
	}
}

// writeFlow writes the flow arrow from a SpanHandle's parent parentID,
// which started at parentAt on goroutine parentGid (on lane parentLane,
// with lanes), to the SpanHandle that started with start on goroutine gid
// (on lane lane).
func (f *flusher) writeFlow(start *slot, rest []slot, gid, parentGid, parentID uint64, parentAt int64, lane, parentLane uint64) {
	at := f.enc.size()
	if f.shared != nil {
		f.enc.nextOnLane(parentLane)
	}
	f.enc.anyFlow(start, rest, 's', parentGid, parentAt)
	if len(f.tees) > 0 {
		f.clipFlowForTees(start.at(), anyMark|parentID, parentAt, at)
	}
	if f.shared != nil {
		f.enc.nextOnLane(lane)
	}
	f.enc.anyFlow(start, rest, 'f', gid, start.at())
	f.skipEarlierFlow(start.at(), at)
}

// drawnAs notes how the SpanHandle st is drawn, and writes the flows to
// its children that waited for it, or drops them.
func (f *flusher) drawnAs(st *anyState, d drawing) {
	if st.drawing != drawingUnknown {
		return
	}
	st.drawing = d
	if d == drawnOnTrack {
		for i := range st.flows {
			p := &st.flows[i]
			f.writeFlow(&p.start, p.rest, p.gid, p.parentGid, p.parentID, p.parentAt, p.lane, p.parentLane)
		}
	}
	st.flows = nil
}

// written reports whether the B of the SpanHandle id, open with state st,
// is in the file.
func (f *flusher) written(st *anyState, id uint64) bool {
	s := f.open.stack(st.gid, false)
	if s == nil {
		return false
	}
	for i := range *s {
		if o := &(*s)[i]; o.token == anyMark|id {
			return o.written
		}
	}
	return false
}
