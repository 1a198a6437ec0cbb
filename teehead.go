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
// and its end what Close writes (a B event for each span still open whose
// B is still to be written, an "e" for each async operation still open,
// then "]"). Both are encoded aside, from the flusher's tables, without
// changing what the file gets: the file's spans still end as they would
// without the tee.

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
	done := f.aside(64<<10 + 128*(f.names.len()+f.open.count))
	f.appendHeader()
	f.open.appendBegins(&f.enc, writtenSpans)
	f.asyncs.reopen(&f.enc)
	f.open.anys.appendWrittenAsyncs(&f.enc)
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
	f.tees = append(f.tees, attachedTee{s: s, before: f.flows.snapshot(), since: nanotime()})
	return nil
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

// An attachedTee is a tee as the flusher knows it: its stream, and the
// flows open when it started, whose steps and ends it leaves out.
type attachedTee struct {
	s      *teeStream
	before map[asyncOp]bool
	since  int64 // when it started
}

// skipEarlierFlow leaves the flow from a SpanHandle's parent, written
// from offset at, out of the tees that started after the SpanHandle did,
// at start: the slices it joins may have been written before them (its
// parent, or the span its async slice began in, ended before the tee).
func (f *flusher) skipEarlierFlow(start int64, at int) {
	for _, t := range f.tees {
		if start < t.since {
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

// detachTee ends s's trace with what the events so far leave open, and
// queues it after every batch encoded so far, unless s is detached
// already (Close ended it). Under f.mu, after a pass.
func (f *flusher) detachTee(s *teeStream) {
	i := slices.IndexFunc(f.tees, func(t attachedTee) bool { return t.s == s })
	if i < 0 {
		return
	}
	f.tees = slices.Delete(f.tees, i, i+1)
	f.send()
	done := f.aside(64<<10 + 128*f.open.count)
	f.open.appendBegins(&f.enc, unwrittenSpans)
	at := nanotime()
	f.asyncs.cut(&f.enc, at)
	f.open.anys.endAsyncs(&f.enc, at)
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
