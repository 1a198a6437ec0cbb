package tracer

import (
	"math"
	"strings"
	"sync"
	"time"

	"github.com/gotracer/tracer/internal/imported"
	"github.com/gotracer/tracer/internal/jsonenc"
	"go.uber.org/atomic"
)

// batchBytes is the size at which the encoder queues what it has encoded
// for the writer and starts a new batch.
const batchBytes = 256 << 10

// The flusher owns encoding. Its encoding state is guarded by mu, so the
// flusher goroutine, a recording goroutine that helps (assist.go), Flush
// and Close never encode at the same time; its writer (writer.go) runs on
// a goroutine of its own.
type flusher struct {
	mu      sync.Mutex
	r       *recorder // whose chains it reads
	opts    *options  // the tracer's, read only
	base    int64     // nanotime of ts 0
	enc     encoder
	wall    time.Time // wall clock of ts 0
	clock   timebase  // converts the events' raw readings: see timebase.go
	cursors []cursor
	out     writer

	open          openSpans
	asyncs        openAsyncs // to end them with the file: see openasyncs.go
	reportedDrops uint64
	dropsShown    bool // the drop counter is in the trace: see appendDropCounter
	closing       bool // Close's last pass: no rotation
	closed        atomic.Bool

	batchLimit int           // bytes to encode before queueing: batchBytes, or less near a rotation
	fileRaw    int64         // bytes encoded for the current file, when rotating
	headRaw    int64         // of them, the file's head and the tracks' names: see maybeRotate
	traits     sinkTraits    // what the sink says of itself
	names      *trackNames   // goroutine names to write again: for files, a window or a tee's head
	shared     *sharedTracks // goroutines drawn on lanes (WithLanes), if not nil
	auto       autoNames     // goroutines named, by the program or by the flusher

	forgotten atomic.Uint64 // open spans given up: see pop and maxOpenSpans

	kept []slot // span ends kept aside, in time order: see keepEnd

	imp importState // events from outside the chains: see imported.go

	// giveUp, while Flush encodes on its caller's goroutine, fires at the
	// stop timeout: a pass waiting for a free batch then stops early.
	giveUp <-chan time.Time

	periodic bool // the pass under way is the flusher goroutine's: see waitForEvents

	tees    []attachedTee // the tees attached and not yet ended: see teehead.go
	flows   openFlows     // for the tees: see noteFlow
	lastCut int64         // the last pass's cut: where a tee's window starts and ends
}

// A cursor walks one chain during a pass; the chain keeps its position.
type cursor struct {
	l    *chain
	head uint64 // published slots of l.read, as last loaded
}

// prepare readies f to encode r's chains for sink s, with the options o.
// Its first step takes the anchor of ts 0, and it returns ts 0's nanotime.
func (f *flusher) prepare(r *recorder, o *options, s sink) (base int64) {
	base = f.clock.start()
	f.r, f.opts, f.base, f.wall = r, o, base, wallAt(base)
	f.batchLimit = batchBytes
	f.traits = s.traits()
	// Every tracer remembers the names the program gave its goroutines,
	// for a tee's head. Files and a window write names again, those the
	// flusher gave too, and need to know which goroutines each batch
	// holds (the encoder tells them: fileNames).
	f.names = newTrackNames()
	f.asyncs.keepArgs = f.traits.files != nil
	if o.lanes {
		f.shared = newSharedTracks(f.names)
		f.open.forget = f.shared.abandon
	}
	f.enc = newEncoder(processID, base)
	f.enc.drawOn(f.fileNames(), f.shared)
	f.out.prepare(s, o.onError, &r.progress, &r.own.writing, o.clock)
	return base
}

// fileNames returns the track names the encoder tells of every event's
// track, nil if the names are not written again in the file: see
// trackNames.see.
func (f *flusher) fileNames() *trackNames {
	if f.traits.files != nil || f.traits.window {
		return f.names
	}
	return nil
}

// start starts the writer goroutine and the flusher goroutine, which
// closes done when Close stops it.
func (f *flusher) start(done chan<- struct{}) {
	go f.out.run()
	go f.run(done)
}

// run is the flusher goroutine. It encodes when a P seals a chunk (the
// recording goroutine wakes it) and every flush interval, and gives
// memory back to the pool every second or so. It closes done when Close
// stops it.
func (f *flusher) run(done chan<- struct{}) {
	defer close(done)
	r := f.r
	r.flusherRuns()
	ticks, stop := f.opts.clock.ticks(f.opts.flushInterval)
	defer stop()
	lastTrim := time.Now()
	for {
		select {
		case <-r.stop:
			return
		case <-r.wake:
		case now := <-ticks:
			if now.Sub(lastTrim) >= time.Second {
				lastTrim = now
				r.pool.trim(r.chainCount() + assistChunks)
			}
		}
		f.mu.Lock()
		f.periodic = true
		f.pass(true)
		f.periodic = false
		f.mu.Unlock()
		r.refusal.report(f.opts.onError)
	}
}

// assist is a pass by a recording goroutine whose P sealed assistChunks
// chunks, or that waits for room, unless a pass is under way: see
// assist.go.
func (f *flusher) assist() {
	if f.mu.TryLock() {
		f.pass(false)
		f.mu.Unlock()
	}
}

// sinkStalled reports whether a write has not returned for stallAfter.
func (f *flusher) sinkStalled() bool { return f.out.stalled() }

// sinkBehind reports whether the sink is slower than the encoder now.
func (f *flusher) sinkBehind() bool { return f.out.behind() }

// writeHeader writes the opening of the file: "[" and the process metadata
// with the wall-clock time of ts 0. Perfetto
// recognises a JSON trace only once it sees `[{"`, so this goes out at once.
// A flight recorder writes its header when a trace is taken.
func (f *flusher) writeHeader() error {
	if f.traits.window {
		return nil
	}
	done := f.enc.apart(64 << 10)
	f.appendHeader()
	n, err := f.out.writeHead(done())
	if f.traits.files != nil {
		f.fileRaw = int64(n)
	}
	return err
}

// appendHeader starts a trace in the empty buffer: "[" and the process
// metadata with the wall-clock time of ts 0.
func (f *flusher) appendHeader() {
	o := f.opts
	f.enc.openArray()
	f.appendProcessName()
	if o.hasSort {
		f.enc.processSortIndex(o.processSort)
	}
	if len(o.labels) > 0 {
		f.enc.processLabels(strings.Join(o.labels, ","))
	}
}

// appendDropCounter writes the "tracer.dropped" counter: the number of
// events that will never reach the file, dropped so far because a ring was
// full or lost in a write that failed. The counter's track appears only
// once something was dropped: its first value, the first time, is a zero
// at ts 0, so the track shows when the drops began.
func (f *flusher) appendDropCounter(ts int64) {
	if !f.dropsShown {
		f.dropsShown = true
		drops := f.reportedDrops
		f.reportedDrops = 0
		f.appendDropCounter(f.base)
		f.reportedDrops = drops
	}
	f.enc.dropCounter(ts, f.reportedDrops)
}

// reportDrops writes the drop counter at ts if its value changed, and
// not before something was dropped.
func (f *flusher) reportDrops(ts int64) {
	drops := f.dropsSoFar()
	if drops == f.reportedDrops || drops == 0 && !f.dropsShown {
		f.reportedDrops = drops
		return
	}
	f.reportedDrops = drops
	f.appendDropCounter(ts)
}

// appendProcessName writes the process metadata: its name and the clock
// anchors of ts 0. It starts every file, and ends one in which nothing
// was dropped, as the last event, without a comma (see appendEnd): the
// same event twice, which both viewers take as one.
func (f *flusher) appendProcessName() {
	f.enc.processName(f.opts.processName, f.wall)
}

// pass encodes every event published before it started and queues it for
// the writer. With block false (a recording goroutine helping) it encodes
// only as much as the writer's queue takes and reports whether it got to
// the end; with block true it waits for the writer when the queue is full.
//
// Ordering: each chain is sorted by the head's clock reading, taken while
// the writer was pinned. pass reads the clock once, as cut, and then
// merges the chains by time, taking only events with at < cut. A goroutine
// that moved between Ps has its events in several chains; the merge puts
// them in the order it recorded them. Taking only at < cut is what makes
// that order hold across passes too: if an event with at < cut is taken,
// every earlier event of the same goroutine was published before that
// goroutine's clock read, hence before cut, hence before this pass loaded
// any chain's head (all of which it does after reading cut), so it is taken
// in this pass or was in an earlier one. Events at or after cut stay in
// their chain for the next pass. A pass that stops early, when the queue is
// full, has taken a prefix of the merge: everything older than what it
// left, so the next pass goes on in order.
//
// "Published before that goroutine's clock read" is not what storeRelease
// gives: on amd64 it is a plain store, which may still sit in the CPU's
// store buffer when the same thread reads the clock. It holds because the
// two events are in different chains only if the goroutine changed P in
// between, and the runtime hands a goroutine or a P between threads with
// locked (full-barrier) instructions, which drain the store buffer. The
// rest of the chain assumes the monotonic clock agrees across CPUs (Linux
// guarantees it) and that the head loads happen after cut is read; on
// amd64 a later load may in principle be performed a few dozen cycles
// before RDTSC, far less than it takes a goroutine to change P. Within one
// chain, order needs none of this: it is the chain's order.
//
// The batches reach the writer in the order they were queued, and only one
// goroutine encodes at a time, so the file holds events in encoding order.
func (f *flusher) pass(block bool) bool {
	if f.closed.Load() {
		return false
	}
	f.takeFailures()
	if !f.startBatch(block) {
		return false
	}
	cut := f.clock.cut()
	f.lastCut = cut
	f.takeKeptEnds()
	f.cursors = f.cursors[:0]
	for _, l := range *f.r.chains.Load() {
		if l != nil {
			f.cursors = append(f.cursors, cursor{l: l})
		}
	}
	complete := true
	wait := false
merge:
	for {
		i, limit := f.nextCursor(cut)
		if i < 0 {
			break
		}
		c := &f.cursors[i]
		for {
			h := f.peek(c)
			if h == nil || h.at() >= cut || h.at() > limit {
				break
			}
			if len(f.kept) > 0 && f.kept[0].at() <= h.at() {
				f.popKeptEnds(h.at() + 1)
			}
			if h.setsName() && f.shared == nil { // with lanes, goroutines are no tracks
				s, pos := c.l.chunk()
				f.names.note(h, s[pos+1:pos+h.slots()])
			}
			c.l.skip(f.take(c, h, cut, limit))
			if f.full() && !f.nextBatch(block) {
				complete = false
				break merge
			}
		}
	}
	if complete {
		f.popKeptEnds(cut)
		f.forgotten.Add(uint64(f.open.trim(f.r, maxOpenSpans)))
		wait = f.waitForEvents()
		if !f.traits.window && !wait { // a flight recorder writes spans whole: see FlightRecorder
			complete = f.writeOldBegins(f.opts.clock.oldBefore(cut, f.opts.flushInterval), block)
		}
	}
	if complete {
		if !wait {
			f.reportDrops(cut)
		}
		f.drainImported(block)
		f.send()
	}
	f.r.progress.broadcast()
	return complete
}

// waitForEvents reports whether a pass that found no event to write
// should write nothing else either: a periodic pass, after a write that
// failed. What it would write (the B events the failure lost, written
// again, the goroutines' names, the drop counter) waits for the next
// event, a Flush or Close: a sink that stays broken (a pipe whose reader
// died) would fail that write on every pass, counting the same B events
// lost again each time and telling the error handler each time.
func (f *flusher) waitForEvents() bool {
	return f.periodic && f.enc.empty() && f.out.lastFailed()
}

// passBy is a pass that waits for free batches until giveUp fires, Flush
// on its caller's goroutine: it reports whether the pass was complete.
func (f *flusher) passBy(giveUp <-chan time.Time) bool {
	f.giveUp = giveUp
	defer func() { f.giveUp = nil }()
	return f.pass(true)
}

// peek returns the head slot of the next event of c's chain, or nil if
// none is published. It moves on to the next chunk when it has read one
// to its end, and gives the one it leaves back to the pool.
func (f *flusher) peek(c *cursor) *slot {
	h := c.l.nextEvent(&c.head)
	if h != nil && !f.clock.quick(h) {
		f.clock.fix(h)
	}
	return h
}

// dropsSoFar counts the events that will never reach the file: dropped
// because the buffers were full on a stalled sink, or lost in a write
// that failed.
func (f *flusher) dropsSoFar() uint64 {
	return f.out.lost.Load() + f.r.dropped.Load() + f.forgotten.Load()
}

// take encodes the event whose head is h, at c's position, and returns how
// many slots it used. A span start followed directly by its own end
// becomes one X event and uses both, and so do the spans of its goroutine
// that follow it back to back (see takeRun).
func (f *flusher) take(c *cursor, h *slot, cut, limit int64) uint64 {
	l := c.l
	n := h.slots()
	s, pos := l.chunk()
	rest := s[pos+1 : pos+n]
	f.imp.note(h, rest)
	switch k := h.kind(); {
	case k == kindThreadName:
		f.auto.program(h.gid())
	case k != kindCounter && k != kindThreadSort && k != kindEnd && k != kindAnyEnd:
		f.autoName(h.gid())
	}
	switch h.kind() {
	case kindSpan, kindBegin:
		if h.kind() == kindSpan {
			if used := f.takeRun(c, h, cut, limit); used > 0 {
				return used
			}
		}
		f.push(h, rest, l.id<<32|h.n>>32)
	case kindEnd:
		f.pop(h, rest)
	case kindAnyBegin:
		f.pushAny(h, rest)
	case kindAnyEnd:
		f.popAny(h, rest)
	case kindThreadName, kindThreadSort:
		if f.shared != nil {
			// A goroutine on lanes names its group, not a track.
			if h.kind() == kindThreadName {
				f.shared.setName(h.gid(), h.str())
			}
			break
		}
		if f.traits.window {
			// A dump names every goroutine it remembers (see
			// tracknames.go): one in the window too would be twice.
			break
		}
		f.enc.event(h, rest)
	default:
		var lane *sharedTrack
		if f.shared != nil && h.kind() != kindCounter {
			lane = f.momentaryLane(h)
		}
		f.asyncs.note(h, rest) // a dump pairs them itself (see keepPairs), a tee's head needs them
		at := f.enc.size()
		f.enc.event(h, rest)
		if h.isFlow() {
			f.noteFlow(h, rest, at) // before clipLateForTees: a tee that leaves it out does
		}
		if len(f.tees) > 0 {
			f.clipLateForTees(h.at(), at)
		}
		if lane != nil {
			f.shared.give(lane, h.at())
		}
	}
	return n
}

// takeRun encodes as X events the span that starts with h, at c's
// position, if its own end follows it directly, and then each span of
// the same goroutine that follows back to back the same way, up to the
// first event that is anything else or that the pass's loop would not
// take yet: at or after cut, after limit, after a kept end that is due,
// or once the batch is full. It returns the slots it used, 0 if h's end
// does not follow it.
//
// It is the pass's loop for what a tight loop records: for these events
// the rest of the loop (peek, the source's and the names' notes, take's
// switch) does nothing but cost, as the goroutine is the one just named
// and told. Each span is tested as take would test it alone.
func (f *flusher) takeRun(c *cursor, h *slot, cut, limit int64) uint64 {
	l := c.l
	s, start := l.chunk()
	gid := h.gid()
	pos := start
	for {
		n := h.slots()
		e := pos + n // where its end must be
		if e >= c.head {
			if c.head = l.published(); e >= c.head {
				break
			}
		}
		// A freed token can be taken by another goroutine's span before
		// the end that freed it is recorded: match the goroutine too.
		end := &s[e]
		if !f.clock.quick(end) {
			f.clock.fix(end)
		}
		if end.kind() != kindEnd || end.n != l.id<<32|h.n>>32 || end.gid() != gid || end.at() >= cut {
			break
		}
		// The end's args follow it: published with it, as an event
		// never straddles chunks.
		en := end.slots()
		var rest, endArgs []slot
		if n > 1 {
			rest = s[pos+1 : e]
		}
		if en > 1 {
			endArgs = s[e+1 : e+en]
		}
		var lane *sharedTrack
		if f.shared != nil {
			lane = f.momentaryLane(h)
		}
		f.enc.complete(h, rest, endArgs, end.at()-h.at())
		if lane != nil {
			f.shared.give(lane, end.at()) // busy until the span ends
		}
		pos = e + en
		if pos >= c.head || f.full() {
			break
		}
		if h = &s[pos]; h.kind() != kindSpan || h.gid() != gid {
			break
		}
		if !f.clock.quick(h) {
			f.clock.fix(h)
		}
		if at := h.at(); at >= cut || at > limit || len(f.kept) > 0 && f.kept[0].at() <= at {
			break
		}
	}
	return pos - start
}

// nextCursor returns the cursor whose next event is the oldest one before
// cut, and the time of the oldest next event among the others: the merge
// takes from the first until it passes the second.
func (f *flusher) nextCursor(cut int64) (best int, limit int64) {
	best, bestAt, limit := -1, cut, int64(math.MaxInt64)
	for i := range f.cursors {
		h := f.peek(&f.cursors[i])
		if h == nil {
			continue
		}
		if at := h.at(); at < bestAt {
			if best >= 0 {
				limit = bestAt
			}
			best, bestAt = i, at
		} else if at < limit {
			limit = at
		}
	}
	return best, limit
}

// full reports whether the batch under way holds batchLimit bytes: time
// for nextBatch. Apart, so that it inlines into the merge loop.
func (f *flusher) full() bool { return f.enc.size() >= f.batchLimit }

// nextBatch queues the batch under way and starts the next, as startBatch
// does; it returns false if it got none.
func (f *flusher) nextBatch(block bool) bool {
	f.send()
	return f.startBatch(block)
}

// startBatch makes sure the encoder has a batch, taking a free one, and
// reports whether it could: with block false it does not wait for one.
// With rotation, a batch that passes the file's limit starts a new file.
func (f *flusher) startBatch(block bool) bool {
	if f.enc.started() {
		return true
	}
	b := f.out.freeBatch(block, f.giveUp)
	if b == nil {
		return false
	}
	f.enc.start(b)
	if f.traits.files != nil {
		f.maybeRotate()
	}
	return true
}

// appendNames writes the names of the tracks the batch holds events of
// that are not named in the file yet: new lanes, and goroutines named in
// an earlier file (see tracknames.go). They go at the end of the batch,
// before the array's end if the batch ends it.
func (f *flusher) appendNames() {
	f.appendLaneNames()
	f.names.forPending(f.appendTrackName)
}

// appendLaneNames writes the names of the lanes made since it last ran
// (see WithLanes). A flight recorder's dump writes every name it
// remembers instead.
func (f *flusher) appendLaneNames() {
	if f.shared == nil {
		return
	}
	if f.traits.window {
		f.shared.forgetUnnamed()
		return
	}
	f.shared.forUnnamed(f.appendTrackName)
}

// appendTrackName writes the name of track tid, a goroutine or a lane.
func (f *flusher) appendTrackName(tid uint64, tn *trackName) {
	f.enc.appendTrackName(tid, tn)
}

// momentaryLane draws the event with head h on a lane of its goroutine's
// group, unless the goroutine holds one, and returns the lane to give back
// once the event is written, nil if none (see sharedTracks.momentary).
func (f *flusher) momentaryLane(h *slot) *sharedTrack {
	tr := f.shared.momentary(h.gid(), h.str(), h.at())
	if tr != nil {
		f.enc.nextOnLane(tr.tid)
	}
	return tr
}

// send queues the batch encoded so far for the writer, unless it is empty.
func (f *flusher) send() {
	if f.enc.empty() {
		return
	}
	before := f.enc.size()
	f.appendNames()
	f.headRaw += int64(f.enc.size() - before) // see maybeRotate
	f.names.nextBatch()
	b := f.enc.finish()
	f.fileRaw += int64(len(b.buf))
	f.out.enqueue(b)
}

// takeFailures brings the encoder up to date with the writes that failed.
// Events before the point where a write failed reached the sink (see
// failure). Of those after it, the spans still open whose B event they
// held are written again (or become X events); the E events whose B is in
// the file the writer itself writes again, before anything later (see
// failures). Goroutine names and the drop counter are written again too.
func (f *flusher) takeFailures() {
	seq, _ := f.enc.pos()
	for _, fl := range f.out.takeFailures(seq) {
		f.open.unwrite(fl)
		f.names.newFile()
		f.reportedDrops = math.MaxUint64
	}
}

// sync waits until the writer has written everything queued, and returns
// the write errors since the last sync.
func (f *flusher) sync() error { return f.syncBy(nil) }

// syncBy is sync that gives up when giveUp fires (never, if nil).
func (f *flusher) syncBy(giveUp <-chan time.Time) error {
	b := &batch{op: opSync, done: make(chan error, 1)}
	f.out.queue <- b
	select {
	case err := <-b.done:
		return err
	case <-giveUp:
		return stalled(f.opts.stopTimeout)
	}
}

// close encodes everything left and ends the JSON array; the caller then
// waits for the writer and closes the sink (writer.finish) once it has
// released the flusher's mu, since closing a Sink runs user code. The last
// event is the final drop counter, written without the comma, so a closed
// file is strict JSON.
func (f *flusher) close() {
	if len(f.tees) > 0 {
		f.pass(true)
		f.endTees()
	}
	f.closing = true
	if !f.traits.window {
		f.pass(true)
		f.startBatch(true)
		// Spans still open were running when the trace stopped (Stop on a
		// signal or a panic), or were never ended: write them all as B
		// events, however young, and say so. Both viewers draw a B without
		// its E to the end of the trace; chrome://tracing leaves out a "b"
		// without its "e", so the async operations and the SpanHandles
		// drawn as async slices still open end here, as at the end of a
		// rotated file.
		f.reportNeverEnded()
		f.writeOldBegins(math.MaxInt64, true)
		at := nanotime()
		f.asyncs.cut(&f.enc, at)
		f.open.anys.cutAsyncs(&f.enc, at)
		f.appendEnd()
		f.send()
	} else {
		// A flight recorder writes a span when it ends, and a dump the
		// ones still open: once it is closed, no trace can be taken of
		// those, which count as its window's events do (windowSink.Close).
		f.traits.openAtClose(uint64(f.open.count))
	}
	f.closed.Store(true)
	f.r.countLate(f.unread())
	f.lateKeptEnds()
}

// unread counts the events published after the last pass of Close, which
// will never be written.
func (f *flusher) unread() uint64 {
	n := uint64(0)
	for _, l := range *f.r.chains.Load() {
		if l == nil {
			continue
		}
		c := cursor{l: l}
		for h := f.peek(&c); h != nil; h = f.peek(&c) {
			l.skip(h.slots())
			n++
		}
	}
	return n
}

// appendEnd ends the trace: the last event without its comma, then "]".
// The last event is the drop counter, once something was dropped; else
// the last event of the batch, or, if it has none, the process metadata
// again.
func (f *flusher) appendEnd() {
	f.appendLast()
	if !f.enc.endsWithEvent() {
		// No event of this batch to end the array with.
		f.appendProcessName()
	}
	f.enc.closeArray()
}

// appendLast appends the events that go last in a trace: names still to
// write, and the drop counter once something was dropped.
func (f *flusher) appendLast() {
	f.appendNames() // Close's B events may be the first of their goroutines in this file
	if drops := f.dropsSoFar(); drops > 0 || f.dropsShown {
		f.reportedDrops = drops
		f.appendDropCounter(nanotime())
	}
}

func (f *flusher) isClosed() bool { return f.closed.Load() }

func (f *flusher) stats() Stats {
	w := &f.out
	s := Stats{
		Events:     w.events.Load(),
		Bytes:      w.bytes.Load(),
		Flushes:    w.flushes.Load(),
		SinkErrors: w.sinkErrors.Load(),
		Lost:       w.lost.Load(),
		Unmatched:  f.r.unmatched.Load(),
		Forgotten:  f.forgotten.Load(),
	}
	if o := f.traits.overwritten; o != nil {
		s.Overwritten = o.Load()
	}
	if c := f.traits.files; c != nil {
		s.Deleted = c.deleted()
	}
	return s
}

// maybeRotate is called as the encoder starts a batch. When the current
// file is full, counting what is queued for it, the batch starts a new
// file (an opRotate batch): its end holds the end of the current file,
// and its buffer starts with the head of the new one. The encoder decides, rather
// than the writer, because the head holds what only the encoder knows:
// the goroutine names and the spans still open. Close never rotates, so
// its last events never go to a new file of their own.
//
// A file is full once the events after its head fill it: the head
// repeats the B events of the spans open across its start, and the file
// names the goroutines of those spans, which may be more than the limit
// (a program that never ends its spans); counting them would start a new
// file at every batch, each repeating them all.
func (f *flusher) maybeRotate() {
	ratio := math.Float64frombits(f.out.ratio.Load())
	// A file takes at least as many bytes of events as its head before
	// the next rotation: a head of thousands of spans never ended, written
	// again at the top of every file of a small size, would otherwise be
	// most of what the tracer writes, and slow the writer past the flush
	// interval (the torture test's seed 7707595678961374).
	limit := max(float64(f.opts.sink.maxSize), float64(f.headRaw)*ratio)
	size := float64(f.fileRaw-f.headRaw) * ratio
	if !f.closing && size >= limit {
		f.enc.endFile()
		at := nanotime()
		f.asyncs.cut(&f.enc, at)
		f.open.anys.cutAsyncs(&f.enc, at)
		f.appendEnd()
		f.enc.newFile()
		f.names.newFile()
		f.appendHeader()
		f.enc.opened()
		if f.dropsShown {
			f.appendDropCounter(nanotime())
		}
		f.reopenSpans()
		f.enc.headDone()
		f.fileRaw, f.headRaw, size = 0, int64(f.enc.size()), 0
	}
	f.batchLimit = int(min(max((limit-size)/ratio, 16<<10), batchBytes))
}

// reopenSpans writes again the B events of the spans whose B event is in
// an earlier file and whose E event is yet to come, outermost first, and
// the "b" events of the async operations open.
func (f *flusher) reopenSpans() {
	f.open.reopen(&f.enc)
	f.asyncs.reopen(&f.enc)
}

// drainImported appends what the source holds to the batches of this
// pass, starting new batches as they fill. With block false (a recording
// goroutine helping) it stops when no batch is free; the rest waits for
// the next pass.
func (f *flusher) drainImported(block bool) {
	for f.enc.started() {
		src := f.imp.src.Load() // each time: Detach may have come meanwhile
		if src == nil {
			return
		}
		if !f.enc.drain(src, f.batchLimit) {
			return
		}
		f.send()
		f.startBatch(block)
	}
}

// snapshot returns a whole trace of window, a flight recorder's batches:
// the header, the events whose pairs are whole (flightpairs.go), the
// goroutine names, a B event for each span still open, and the end. It
// leaves the batch being encoded as it was.
//
// The trace is as large as the window, so it is made in one allocation of
// its exact size: what the encoder writes (the header, and what follows
// the window) is encoded first, aside, and the window's kept events
// copied between. A buffer grown as it filled would hold the window up
// to three times at once while a trace is taken.
func (f *flusher) snapshot(window [][]byte) []byte {
	// Async and flow events whose other half left the window are left
	// out, and operations still open end now.
	kept, ends, _ := keepPairs(window, jsonenc.Micros(nil, nanotime()-f.base))
	// About 100 bytes a name and an open span's B event, more with args.
	done := f.enc.apart(64<<10 + 128*(f.names.len()+f.open.count))
	f.appendHeader()
	head := f.enc.size()
	f.names.forAll(func(gid uint64, tn *trackName) { f.enc.appendTrackName(gid, tn) })
	f.open.appendBegins(&f.enc, allSpans, nil)
	f.open.anys.appendAsyncs(&f.enc)
	f.appendLast()
	enc := done()

	// The object form, as Close leaves a plain file: with
	// "displayTimeUnit":"ns", chrome://tracing reads the times to the
	// nanosecond; the bare array it reads to the microsecond, and nests
	// spans less than a microsecond apart in one another, taking their
	// flow arrows' slices away. A recording is written whole, so the
	// object's head comes first.
	size := len(objectHead) + len(enc) + len(ends) + 1 + 2 // closeArray's "]", the object's "}\n"
	for _, k := range kept {
		size += len(k)
	}
	b := make([]byte, 0, size)
	b = append(b, objectHead...)
	b = append(b, enc[:head]...)
	for _, k := range kept {
		b = append(b, k...)
	}
	b = append(b, ends...)
	b = append(b, enc[head:]...)
	b = closeArray(b) // the header's events at least end it
	return append(b, "}\n"...)
}

// nameGoroutines gives the goroutines of names their names and sort
// orders, as the package-level functions set them before this tracer
// became the default. On lanes, a name is a group's; a flight recorder
// keeps them for its dumps; otherwise they are written now, and again at
// the head of each rotated file.
func (f *flusher) nameGoroutines(names map[uint64]trackName) {
	for gid, tn := range names {
		if tn.hasName {
			f.auto.program(gid)
		}
	}
	if f.shared != nil {
		for gid, tn := range names {
			if tn.hasName {
				f.shared.setName(gid, tn.name)
			}
		}
		return
	}
	if f.traits.window {
		for gid, tn := range names {
			f.names.adopt(gid, tn)
		}
		return
	}
	if f.isClosed() || !f.startBatch(true) {
		return
	}
	for gid, tn := range names {
		f.enc.appendTrackName(gid, &tn)
		f.names.adopt(gid, tn)
	}
	f.send()
}

// autoName gives goroutine gid, about to have an event written, a name if
// it has none.
func (f *flusher) autoName(gid uint64) {
	if f.shared != nil || !f.auto.need(gid) {
		return // on lanes, goroutines are no tracks
	}
	tn := autoName(gid)
	if names := f.fileNames(); names != nil {
		names.adopt(gid, tn) // named again in later files and in dumps
	}
	if !f.traits.window { // a dump writes the names it remembers
		f.enc.appendTrackName(gid, &tn)
	}
}

// importState is the flusher's link to its source. src is set under
// the flusher's mu but cleared without it: Detach must not wait for a flusher that
// a stalled sink holds up. lastGid is the flusher's, under the flusher's mu.
type importState struct {
	src     atomic.Pointer[sourceBox]
	lastGid uint64 // the goroutine last reported to src.Spanned
}

// A sourceBox holds a Source, for atomic.Pointer.
type sourceBox struct{ imported.Source }

// attach makes src the source, under the flusher's mu.
func (s *importState) attach(src imported.Source) {
	s.lastGid = 0
	s.src.Store(&sourceBox{src})
}

// detach forgets src, if it is the source, without the flusher's mu.
func (s *importState) detach(src imported.Source) {
	if box := s.src.Load(); box != nil && box.Source == src {
		s.src.CompareAndSwap(box, nil)
	}
}

// note tells the source about a span start or a track name that the
// flusher is about to encode.
func (s *importState) note(h *slot, rest []slot) {
	src := s.src.Load()
	if src == nil {
		return
	}
	switch h.kind() {
	case kindSpan, kindBegin:
		if gid := h.gid(); gid != s.lastGid {
			s.lastGid = gid
			src.Spanned(gid)
		}
	case kindThreadName:
		src.Named(h.gid(), h.str(), true, 0, false)
	case kindThreadSort:
		src.Named(h.gid(), "", false, int64(rest[0].num), true)
	}
}
