package tracer

import "slices"

// The flusher's side of a tee (see Tracer.Tee): the head and the end of
// the tee's trace, which the writer goroutine puts around the batches it
// copies to the tee in between.
//
// A tee's trace stands alone, like a rotated file: its head holds what
// the events after it need from before it (the process metadata, every
// goroutine's and lane's name, the B events of the spans whose B is
// written and whose E is to come, the "b" of the async operations open),
// and its end what the events before it leave open (an E event for each
// span still open, after its B if that is still to be written, an "e"
// for each async operation still open, then "]"). Both are encoded aside,
// from the flusher's tables, without changing what the file gets: the
// file's spans still end as they would without the tee.
//
// A tee's trace is its window, from the cut of the pass that attached it
// to the cut of the pass that ends it, as `tracer cut` cuts one: a span
// that began before the window begins at its start, and one still open
// at its end ends there. Spans clipped to one moment would nest wrongly:
// both viewers nest B events of one time in file order, but Perfetto puts
// an X event before a B event of the same time, and catapult nests X
// events of one time only if the outer comes first, where the flusher
// writes a span when it ends, inner first. So the spans open on a
// goroutine at the window's start begin a nanosecond apart just before
// it, outermost first, each at its own start if that is later
// (attachedTee.clips), the innermost two nanoseconds before it: the last
// nanosecond is for a span the attach pass did not see, whose start a
// goroutine read before the cut and published after the pass loaded its
// chain (at most one a goroutine, its newest: see pass). Those whose B
// the file has begin so in the tee's head; the events written later of a
// span that began before the window (its X, its B once it is old, a
// SpanHandle's "b", the flow from a SpanHandle's parent) reach the tee
// moved there (clipForTees), the file's copy unchanged.

// attachTee makes s a tee of the tracer from now on: it encodes what was
// recorded before for the file alone, then queues s's head. Under f.mu.
func (f *flusher) attachTee(s *teeStream) error {
	if f.closed.Load() || f.closing {
		return ErrClosed
	}
	// What was recorded before goes to the file alone, with the batch
	// under way, which may hold the B events the head repeats. Once the
	// writer has written it all, the flusher learns of the writes that
	// failed: the head must not repeat a B event the file lost, which
	// the flusher writes again later (see failedwrites.go). A write that
	// fails after this ends the tee (writer.cutTees).
	f.pass(true)
	f.send()
	f.out.barrier()
	f.takeFailures()
	t := attachedTee{s: s, before: f.flows.snapshot(), from: f.lastCut}
	t.clips = f.clipsAt(t.from)
	done := f.aside(64<<10 + 128*(f.names.len()+f.open.count))
	f.appendHeader()
	f.open.appendBegins(&f.enc, writtenSpans, t.startOf)
	f.asyncs.reopenFrom(&f.enc, t.from)
	f.open.anys.appendWrittenAsyncs(&f.enc, t.startOf)
	// The names after the events: with lanes, those events may take
	// lanes that are new.
	f.names.forAll(f.appendTrackName)
	if f.ownNamesForgotten() {
		// A plain file's flusher remembers the names the program gave,
		// not its own: the goroutines of the events above get theirs
		// here, and every other one again before its next event.
		f.nameOpen()
		f.auto.forgetOwn()
	}
	f.out.enqueue(&batch{op: opTeeStart, buf: done(), tee: s})
	f.tees = append(f.tees, t)
	s.setWindow(t.from, 0)
	return nil
}

// clipsAt returns where each span and SpanHandle open now begins in the
// trace of a tee whose window starts at from, by token: outermost first,
// a nanosecond apart, the innermost two nanoseconds before from (the
// last is for a span this pass did not see: see startOf), each at its
// own start if that is later; a SpanHandle off its stack, drawn as an
// async slice, a nanosecond before from.
func (f *flusher) clipsAt(from int64) map[clipKey]int64 {
	m := make(map[clipKey]int64, f.open.count+len(f.open.anys.asyncs))
	for _, s := range f.open.stacks {
		n := len(*s)
		for i := range *s {
			o := &(*s)[i]
			m[keyOf(o.start.gid(), o.token)] = max(o.start.at(), from-int64(n-i)-1)
		}
	}
	for id, st := range f.open.anys.asyncs {
		m[keyOf(0, anyMark|id)] = max(st.start.at(), from-1)
	}
	return m
}

// A clipKey is what a tee's clips know an open span or SpanHandle by. A
// SpanHandle's id (token|anyMark) is its own for its life. A span's token
// is its own among the spans the program has open, but not among those
// the flusher has open: an end function frees its token before it records
// the end (formatting a Stringer arg may take milliseconds), and once
// reuseAfter more spans have started on its chain, another goroutine's
// span may take it while the flusher still has the first open. A token
// is its own among the spans of one goroutine, which runs one end
// function at a time.
type clipKey struct{ gid, token uint64 }

// keyOf returns the clipKey of the span with token on goroutine gid, or
// of the SpanHandle token (with anyMark), whatever gid is.
func keyOf(gid, token uint64) clipKey {
	if token&anyMark != 0 {
		return clipKey{token: token}
	}
	return clipKey{gid, token}
}

// startOf returns where the span with token on goroutine gid, or the
// SpanHandle token, which began at start, begins in t's trace.
func (t *attachedTee) startOf(gid, token uint64, start int64) int64 {
	if start >= t.from {
		return start
	}
	if c, ok := t.clips[keyOf(gid, token)]; ok {
		return c
	}
	// Not seen by the attach pass: a goroutine read the clock for it
	// before the cut and published it after the pass loaded its chain.
	// It is the newest of its goroutine (the goroutine's next event
	// reads the clock after that publication, so after the cut): it
	// nests inside those clipped, the innermost of which begins two
	// nanoseconds before from.
	return max(start, t.from-1)
}

// clipForTees gives each tee whose window began after start, the start
// of the span with token on goroutine gid or of the SpanHandle token, the
// event the encoder wrote from offset at (its X, its B, its "b", the flow
// from its parent) moved to where the span begins in the tee's trace: an
// X ending at end lasts until then.
func (f *flusher) clipForTees(gid, token uint64, start int64, at int, end int64) {
	for i := range f.tees {
		t := &f.tees[i]
		if start >= t.from {
			continue
		}
		if c := t.startOf(gid, token, start); c != start {
			f.enc.retimeForTee(t.s, at, c, max(0, end-c))
		}
	}
}

// clipFlowForTees gives each tee that holds the flow from a SpanHandle's
// parent (the SpanHandle began at start, after the tee: see
// skipEarlierFlow), and whose window began after the parent with token
// parent did, at parentAt, the flow's start written from offset at moved
// to where the parent begins in the tee's trace: the arrow still starts
// in it.
func (f *flusher) clipFlowForTees(start int64, parent uint64, parentAt int64, at int) {
	for i := range f.tees {
		t := &f.tees[i]
		if start < t.from || parentAt >= t.from {
			continue
		}
		f.enc.retimeForTee(t.s, at, t.startOf(0, parent, parentAt), 0)
	}
}

// clipLateForTees gives each tee whose window began after at, the time
// of the event (an instant, a counter, an async or flow event) the
// encoder wrote from offset off, that event at the window's start: its
// goroutine read the clock before the cut of the pass that attached the
// tee and published it after that pass loaded its chain (see startOf).
// In the window it is what came first; before it, it would lie outside
// the slices clipped there, and an async operation's end before its
// start.
func (f *flusher) clipLateForTees(at int64, off int) {
	for i := range f.tees {
		if t := &f.tees[i]; at < t.from {
			f.enc.retimeForTee(t.s, off, t.from, 0)
		}
	}
}

// clipEndForTees gives each tee whose window began after start, the
// start of a span or SpanHandle, the end the encoder wrote from offset at
// (its E or "e", at end) at the window's start if end is before it: the
// span's goroutine read the clock for its end before the cut of the pass
// that attached the tee and published it (or kept it aside: see keepEnd)
// after that pass loaded its chain. The spans above it that end with it
// (see pop) end there too, inner first, at one time: at their clipped
// starts, the outer would end before the inner.
func (f *flusher) clipEndForTees(start int64, at int, end int64) {
	for i := range f.tees {
		t := &f.tees[i]
		if start < t.from && end < t.from {
			f.enc.retimeForTee(t.s, at, t.from, 0)
		}
	}
}

// ownNamesForgotten reports whether the flusher forgets the names it
// gives goroutines (see autoName): a plain file's, whose goroutines are
// tracks (no lanes).
func (f *flusher) ownNamesForgotten() bool { return f.shared == nil && f.fileNames() == nil }

// nameOpen writes the name the flusher gives each goroutine with
// something open (a span, a SpanHandle, an async operation begun there),
// unless the program named it: the events a tee's head and end write for
// them are on their tracks. A goroutine named twice in a trace is named
// once in the viewers.
func (f *flusher) nameOpen() {
	named := map[uint64]bool{}
	name := func(gid uint64) {
		if !named[gid] && !f.names.has(gid) {
			named[gid] = true
			tn := autoName(gid)
			f.appendTrackName(gid, &tn)
		}
	}
	for gid := range f.open.stacks {
		name(gid)
	}
	for _, st := range f.open.anys.asyncs {
		name(st.gid)
	}
	for _, st := range f.asyncs.m {
		for i := range st {
			name(st[i].head.gid())
		}
	}
}

// An attachedTee is a tee as the flusher knows it: its stream, its
// window's start, where the spans open then begin in its trace, and the
// flows open then, whose steps and ends it leaves out.
type attachedTee struct {
	s      *teeStream
	before map[asyncOp]bool
	from   int64             // its window's start: the cut of the pass that attached it
	clips  map[clipKey]int64 // where each span and SpanHandle open at from begins in its trace: see clipsAt
}

// skipEarlierFlow leaves the flow from a SpanHandle's parent, written
// from offset at, out of the tees whose window began after the
// SpanHandle did, at start: the slices it joins may have been written
// before them (its parent, or the span its async slice began in, ended
// before the tee).
func (f *flusher) skipEarlierFlow(start int64, at int) {
	for _, t := range f.tees {
		if start < t.from {
			f.enc.skipForTee(t.s, at)
		}
	}
}

// noteFlow notes the flow event with head h that the encoder wrote from
// offset at: a flow begun before a tee started is left out of that tee's
// trace (its start is not there: catapult warns of a step or an end
// without it, and Perfetto counts it), and a flow that ends is forgotten.
func (f *flusher) noteFlow(h *slot, rest []slot, at int) {
	k := asyncOp{rest[0].num, rest[0].meta}
	for _, t := range f.tees {
		if h.kind() != kindFlowBegin && t.before[k] {
			f.enc.skipForTee(t.s, at)
		}
		if h.kind() == kindFlowEnd {
			delete(t.before, k)
		}
	}
	f.flows.note(h.kind(), k)
}

// openFlows is the flows begun and not yet ended, for the tees that
// start while they run. It keeps at most maxOpenAsyncs: past them, it
// forgets half of them (a tee may then hold a step or an end without its
// start).
type openFlows map[asyncOp]bool

// note begins or ends the flow k with an event of kind.
func (o *openFlows) note(kind kind, k asyncOp) {
	switch kind {
	case kindFlowBegin:
		if *o == nil {
			*o = openFlows{}
		}
		if len(*o) >= maxOpenAsyncs {
			for old := range *o {
				if len(*o) <= maxOpenAsyncs/2 {
					break
				}
				delete(*o, old)
			}
		}
		(*o)[k] = true
	case kindFlowEnd:
		delete(*o, k)
	}
}

// snapshot returns a copy of the flows open now.
func (o openFlows) snapshot() map[asyncOp]bool {
	m := make(map[asyncOp]bool, len(o))
	for k := range o {
		m[k] = true
	}
	return m
}

// detachTee ends s's trace at the cut of the pass before, ending what the
// events so far leave open, and queues it after every batch encoded so
// far, unless s is detached already (Close ended it). Under f.mu, after
// a pass.
func (f *flusher) detachTee(s *teeStream) {
	i := slices.IndexFunc(f.tees, func(t attachedTee) bool { return t.s == s })
	if i < 0 {
		return
	}
	t := f.tees[i]
	f.tees = slices.Delete(f.tees, i, i+1)
	f.send()
	done := f.aside(64<<10 + 256*f.open.count)
	to := f.lastCut // the window's end: every event before it is in
	s.setWindow(t.from, to)
	f.endSpans(&t, to)
	f.asyncs.cut(&f.enc, to)
	f.open.anys.endAsyncs(&f.enc, to, t.startOf)
	if f.traits.window || f.shared != nil {
		// A flight recorder's batches name no goroutine (a dump names
		// them all), and the events above may take lanes that are new:
		// every name again.
		f.names.forAll(f.appendTrackName)
	}
	if f.ownNamesForgotten() {
		f.nameOpen() // the goroutines of the events above, again if need be
	}
	f.appendProcessName() // an event to end the array with: the first again, which both viewers take as one
	f.enc.closeArray()
	f.out.enqueue(&batch{op: opTeeEnd, buf: done(), tee: s})
}

// endSpans ends, at to, each span open in the trace of tee t: its B
// event first if it is still to be written (at startOf its token and
// start), then the E events of each goroutine's spans, innermost first.
func (f *flusher) endSpans(t *attachedTee, to int64) {
	for _, s := range f.open.stacks {
		for i := range *s {
			if o := &(*s)[i]; !o.written {
				b := o.start.movedTo(t.startOf(o.start.gid(), o.token, o.start.at()))
				f.enc.begin(&b, o.rest())
			}
		}
		for i := len(*s) - 1; i >= 0; i-- {
			o := &(*s)[i]
			if f.shared != nil {
				f.enc.nextOnLane(f.shared.tid(o.start.gid()))
			}
			f.enc.end(&o.start, o.rest(), nil, to, 0, 0)
		}
	}
}

// endTees ends every tee's trace: Close's first step, after its pass.
func (f *flusher) endTees() {
	for len(f.tees) > 0 {
		f.detachTee(f.tees[0].s)
	}
}

// aside makes the encoder write into a buffer of its own, as apart does,
// without telling the file's track names of what it writes: a tee's
// head and end are not in the file.
func (f *flusher) aside(size int) (done func() []byte) {
	apart := f.enc.apart(size)
	f.enc.drawOn(nil, f.shared)
	return func() []byte {
		f.enc.drawOn(f.fileNames(), f.shared)
		return apart()
	}
}
