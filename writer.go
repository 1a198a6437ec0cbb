package tracer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"go.uber.org/atomic"
)

// Encoding and writing are separate steps. Whoever encodes (the flusher
// goroutine, a recording goroutine that helps, Flush or Close) does it
// under the flusher's mu and queues the encoded batches, in order, for the writer
// goroutine, which alone calls the sink. The queue is bounded: its
// batches are taken from a free list of queueBatches, so encoded data
// takes at most queueBatches batches of memory, and whoever encodes
// without being allowed to wait (a recording goroutine) stops encoding
// when none is free.

// queueBatches is how many encoded batches may wait for the writer.
const queueBatches = 8

// batchOp says what the writer does with a batch.
type batchOp uint8

const (
	opWrite    batchOp = iota // write buf
	opRotate                  // start a new file: end to the old one, then buf, which starts with the new file's head
	opSync                    // write nothing: send the errors so far on done once everything before it is written
	opTeeStart                // copy every later batch to tee, after buf, the head of its trace (see Tracer.Tee)
	opTeeEnd                  // copy nothing more to tee, after buf, the end of its trace
	opBarrier                 // write nothing: send nil on done once everything before it is written
)

// A batch is one unit of the writer's queue.
type batch struct {
	op      batchOp
	buf     []byte
	end     []byte // opRotate: the end of the file being rotated
	headLen int    // opRotate: the new file's head at the start of buf
	openLen int    // opRotate: the part of the head that opens the file, "[" and the process metadata
	events  int    // events in buf, for Stats
	seq     uint64 // the encoder's number for it: names the B events it holds
	done    chan error
	ends    []endRef   // its E events
	repeats []endRef   // opRotate: the B events its head repeats, and where the file holds them
	tee     *teeStream // opTeeStart, opTeeEnd
	skips   []teeSkip  // events some tees leave out, or get otherwise
	alt     []byte     // what some tees get in place of events: see teeSkip
}

// A teeSkip is an event of a batch, buf[start:end], that tee s leaves
// out, or gets as alt[altFrom:altTo] instead (a span clipped to its
// window).
type teeSkip struct {
	s              *teeStream
	start, end     int
	altFrom, altTo int
}

// The encoder fills a batch through these, and the writer reads it.

// reset readies a free batch to be filled.
func (b *batch) reset() {
	b.op, b.headLen, b.openLen, b.ends, b.repeats, b.skips, b.alt = opWrite, 0, 0, b.ends[:0], b.repeats[:0], b.skips[:0], b.alt[:0]
}

// seal gives b its encoded events, buf, how many they are and its number.
func (b *batch) seal(buf []byte, events int, seq uint64) {
	b.buf, b.events, b.seq = buf, events, seq
}

// startsFile makes b start a new file, after end ends the current one:
// see writer.rotate.
func (b *batch) startsFile(end []byte) { b.op, b.end = opRotate, end }

// endBuf returns the buffer of a file's end to fill again.
func (b *batch) endBuf() []byte { return b.end[:0] }

// markOpening notes that the new file's opening is the first n bytes.
func (b *batch) markOpening(n int) { b.openLen = n }

// markHead notes that the new file's head is the first n bytes.
func (b *batch) markHead(n int) { b.headLen = n }

// noteEnd notes the E event at e, should a write fail (see failures).
func (b *batch) noteEnd(e endRef) { b.ends = append(b.ends, e) }

// noteTeeSkip notes an event a tee leaves out.
func (b *batch) noteTeeSkip(k teeSkip) { b.skips = append(b.skips, k) }

// teeAlt returns what tees get in place of events so far, for the
// encoder to append another to: see noteTeeVariant.
func (b *batch) teeAlt() []byte { return b.alt }

// noteTeeVariant notes that tee s gets alt[from:] in place of the event
// buf[start:end]; alt is teeAlt's, with that appended.
func (b *batch) noteTeeVariant(s *teeStream, start, end, from int, alt []byte) {
	b.alt = alt
	b.skips = append(b.skips, teeSkip{s: s, start: start, end: end, altFrom: from, altTo: len(alt)})
}

// noteRepeat notes the B event at r, which the head of a new file
// repeats, should the file be refused (see failures.refused).
func (b *batch) noteRepeat(r endRef) { b.repeats = append(b.repeats, r) }

// A writer is the goroutine that hands encoded batches to the sink, and
// what the encoder and the recording goroutines know of it. It owns the
// sink: the flusher only queues batches, and reads the counters.
type writer struct {
	sink     sink
	files    fileCutter      // the sink's rotation, if it rotates
	onError  func(error)     // the user's error handler
	progress *progressSignal // told when a batch is written: room for the waiting
	gid      *atomic.Uint64  // where to say which goroutine it is: see reentry.go
	clock    stallClock      // what writes are timed on: see stalled

	queue  chan *batch
	free   chan *batch
	exited chan struct{}

	fails  failures // the failed-write protocol's state: see failedwrites.go
	joined []byte   // carried ends and the next batch, for one write

	tees []*teeStream // the tees every batch is copied to: see Tracer.Tee

	fileEvents int // events written to the current file: see rotate

	busySince atomic.Int64 // clock's time when the write under way started, 0 when none is
	failing   atomic.Bool  // the last write failed: see flusher.waitForEvents

	mu   sync.Mutex
	errs errorTally // write errors since the last sync

	events, bytes, flushes, sinkErrors, lost atomic.Uint64
	ratio                                    atomic.Uint64 // float64 bits: file bytes per byte encoded, for rotation
}

func (w *writer) prepare(s sink, onError func(error), progress *progressSignal, gid *atomic.Uint64, clock stallClock) {
	w.sink, w.files, w.onError, w.progress, w.gid, w.clock = s, s.traits().files, onError, progress, gid, clock
	w.queue = make(chan *batch, queueBatches+16) // room for syncs and tees' heads and ends besides the batches
	w.free = make(chan *batch, queueBatches)
	for range queueBatches {
		w.free <- &batch{}
	}
	w.exited = make(chan struct{})
	w.ratio.Store(math.Float64bits(1))
}

// freeBatch takes a free batch for the encoder. With block false it does
// not wait for one; with block true it waits, unless giveUp fires first
// (nil: never). It returns nil if it got none.
func (w *writer) freeBatch(block bool, giveUp <-chan time.Time) *batch {
	select {
	case b := <-w.free:
		return b
	default:
	}
	if !block {
		return nil
	}
	select {
	case b := <-w.free:
		return b
	case <-giveUp:
		return nil
	}
}

// barrier waits until the writer has written everything queued before
// it, without taking the write errors that Flush returns.
func (w *writer) barrier() {
	b := &batch{op: opBarrier, done: make(chan error, 1)}
	w.queue <- b
	<-b.done
}

// enqueue queues b for the writer goroutine. It never blocks: the queue
// has room for every batch, and for the syncs besides.
func (w *writer) enqueue(b *batch) { w.queue <- b }

// stalled reports whether a write has been under way for over stallAfter.
func (w *writer) stalled() bool { return w.writingFor(stallAfter) }

// behind reports whether the sink is slower than the encoder now: a write
// has been under way for over slowWrite. Recording then grows the buffers
// past their soft mark (see assist.go). A full queue alone does not count:
// with more goroutines recording than there are Ps, it means the writer
// is short of CPU time, which recording that waits gives it. A writer
// descheduled inside a write for that long counts, and the buffers grow as
// they did before there was a mark.
func (w *writer) behind() bool { return w.writingFor(slowWrite) }

// writingFor reports whether a write has been under way for over d.
func (w *writer) writingFor(d time.Duration) bool {
	since := w.busySince.Load()
	return since != 0 && w.clock.writeTime()-since > int64(d)
}

// slowWrite is how long a write may take before the sink counts as
// behind. A batch (256 KiB) takes 0.1-0.2 ms to reach the page cache on
// the build VM, but a writer whose write returned waits for a P behind
// the goroutines that record, and with 8 goroutines in a tight loop on 2
// Ps that wait made writes seem to last over 5 ms (not 20 ms).
const slowWrite = 50 * time.Millisecond

// writeHead writes the head of the trace, before the writer goroutine
// starts.
func (w *writer) writeHead(p []byte) (int, error) { return w.sink.Write(p) }

// run is the writer goroutine. It ends when the queue is closed.
func (w *writer) run() {
	defer close(w.exited)
	w.gid.Store(goroutineID())
	for b := range w.queue {
		switch b.op {
		case opSync:
			w.mu.Lock()
			err := w.errs.take()
			w.mu.Unlock()
			b.done <- err
			continue
		case opBarrier:
			b.done <- nil
			continue
		case opTeeStart:
			b.tee.put(b.buf)
			w.tees = append(w.tees, b.tee)
			continue
		case opTeeEnd:
			w.tees = slices.DeleteFunc(w.tees, func(s *teeStream) bool { return s == b.tee })
			b.tee.end(b.buf)
			continue
		case opRotate:
			w.copyToTees(b, b.headLen) // the tees have their own head, and no end yet
			w.fails.unpair(b)
			w.rotate(b)
		default:
			w.copyToTees(b, 0)
			w.fails.unpair(b)
			w.write(b, b.buf)
		}
		b.buf, b.end = b.buf[:0], b.end[:0]
		w.free <- b
		w.progress.broadcast()
	}
}

// copyToTees copies the events of b from offset from, as encoded, to
// every tee, less those it leaves out: before unpair, which turns an E
// whose B the file lost into an instant (a tee has that B), and before a
// write that may fail.
func (w *writer) copyToTees(b *batch, from int) {
	for _, s := range w.tees {
		at := from
		for _, k := range b.skips {
			if k.s == s && k.start >= at {
				s.put(b.buf[at:k.start])
				if k.altTo > k.altFrom {
					s.put(b.alt[k.altFrom:k.altTo])
				}
				at = k.end
			}
		}
		s.put(b.buf[at:])
	}
}

// cutTees ends every tee where it is, after a write that lost events:
// the encoder writes again what the file lost (B events, or the spans
// whole), which a tee, that got the batch whole, would hold twice, a B
// among them that never ends. A tee's trace so ends as a file cut by a
// crash does, and its Stop says why.
func (w *writer) cutTees(err error) {
	for _, s := range w.tees {
		s.abort(fmt.Errorf("tracer: tee: the tracer's own write failed (%w): the tee's trace stops there, as a file cut by a crash does", err))
	}
}

// finish waits for the writer goroutine to write what is queued, closes
// the sink and returns the write errors since the last sync and the
// sink's Close error. The queue must hold nothing more to come.
func (w *writer) finish() error {
	close(w.queue)
	<-w.exited
	for _, s := range w.tees { // none: Close ends them first (see flusher.endTees)
		s.abort(ErrClosed)
	}
	w.lost.Add(uint64(w.fails.drop())) // no write came after the one that failed
	w.mu.Lock()
	err := w.errs.take()
	w.mu.Unlock()
	return errors.Join(err, w.sink.Close())
}

// write writes p, the events of b, to the sink, after the E events a
// failed write carried over (see failures).
func (w *writer) write(b *batch, p []byte) {
	carry := w.fails.carry
	nc := len(carry)
	if len(p) == 0 {
		return
	}
	q := p
	if nc > 0 {
		w.joined = append(append(w.joined[:0], carry...), p...)
		q = w.joined
	}
	w.busySince.Store(w.clock.writeTime())
	n, err := w.sink.Write(q)
	w.busySince.Store(0)
	w.failing.Store(err != nil)
	w.bytes.Add(uint64(n))
	w.flushes.Inc()
	if nc > 0 {
		sent := min(n, nc)
		w.delivered(w.fails.carried(sent))
		n -= sent
	}
	if err != nil {
		w.sinkErrors.Inc()
		if n < len(p) {
			// The events before n reach the sink (a stream completes a cut
			// event with its next write: see writerSink); the rest are
			// lost, and the encoder writes again what it must.
			delivered := len(b.buf) - len(p) + n
			events := min(eventsIn(p[:n]), b.events)
			carried := w.fails.failed(b, delivered)
			w.cutTees(err)
			w.delivered(events)
			w.lost.Add(uint64(max(b.events-events-carried, 0)))
		} else {
			w.delivered(b.events)
		}
		w.mu.Lock()
		w.errs.add(err)
		w.mu.Unlock()
		w.onError(err)
		return
	}
	w.delivered(b.events)
	if w.files != nil {
		w.ratio.Store(math.Float64bits(w.files.ratio()))
	}
}

// lastFailed reports whether the latest write failed.
func (w *writer) lastFailed() bool { return w.failing.Load() }

// delivered counts n events written to the sink.
func (w *writer) delivered(n int) {
	w.events.Add(uint64(n))
	w.fileEvents += n
}

// fail reports an error of the sink that no write returned, such as a
// failed rotation: the events still go to the current file, so it is not
// one of the write errors Flush returns.
func (w *writer) fail(err error) {
	w.sinkErrors.Inc()
	w.onError(err)
}

// takeFailures returns the writes that failed since the last call, for
// the flusher, whose encoder has batch seq under way or begins it next
// (see failedwrites.go).
func (w *writer) takeFailures(seq uint64) []failure { return w.fails.take(seq) }

// maxErrorKinds is how many distinct write errors a tally keeps between
// two syncs; the rest are counted.
const maxErrorKinds = 4

// An errorTally keeps the write errors Flush and Close return: the first
// error of each kind (by its text) and how often each came. A disk that
// stays full fails every write the same way; keeping them all would grow
// the heap for as long as the fault lasts and make Close return an error
// of thousands of lines.
type errorTally struct {
	kinds []repeatedError
	other int // errors of kinds past maxErrorKinds
}

// add counts err.
func (e *errorTally) add(err error) {
	msg := err.Error()
	for i := range e.kinds {
		if e.kinds[i].msg == msg {
			e.kinds[i].n++
			return
		}
	}
	if len(e.kinds) == maxErrorKinds {
		e.other++
		return
	}
	e.kinds = append(e.kinds, repeatedError{err: err, msg: msg, n: 1})
}

// take returns the errors counted so far, nil if none, and starts again.
func (e *errorTally) take() error {
	if len(e.kinds) == 0 {
		return nil
	}
	errs := make([]error, 0, len(e.kinds)+1)
	for i := range e.kinds {
		errs = append(errs, &e.kinds[i])
	}
	if e.other > 0 {
		errs = append(errs, fmt.Errorf("tracer: %d more write errors of other kinds", e.other))
	}
	*e = errorTally{}
	return errors.Join(errs...)
}

// A repeatedError is one kind of write error and how often it came. It
// unwraps to the first one, so errors.Is and errors.As see it.
type repeatedError struct {
	err error
	msg string
	n   int
}

func (r *repeatedError) Error() string {
	if r.n == 1 {
		return r.msg
	}
	return fmt.Sprintf("%s (%d failed writes)", r.msg, r.n)
}

func (r *repeatedError) Unwrap() error { return r.err }

// rotate carries out an opRotate batch on the writer goroutine: ends the
// current file and writes the batch to the new one, whose opening ("["
// and the process metadata) the rotator wrote before it put the file in
// place (see rotator.swap). If no new file could be started, the current
// file goes on, and the batch's events are written to it without the new
// file's head.
func (w *writer) rotate(b *batch) {
	end, carried := b.end, 0
	if c := w.fails.carry; len(c) > 0 {
		// The carried E events end spans of the file being ended.
		end, carried = append(c, b.end...), eventsIn(c)
	}
	// A cut waits for the file before it to be retired (see
	// rotator.retire): as long as a write, for the stall's clock.
	w.busySince.Store(w.clock.writeTime())
	endErr, errs, err := w.files.cut(end, b.buf[:b.openLen], w.fileEvents, carried)
	w.busySince.Store(0)
	for _, err := range errs {
		w.fail(err)
	}
	if err != nil {
		// The file goes on, without the new one's head: its events are
		// not written, but the B events whose copy in the file was lost.
		w.fail(err)
		w.cutTees(err)
		b.events = max(0, b.events-eventsIn(b.buf[:b.headLen]))
		w.fails.refused(b)
		w.write(b, b.buf[b.headLen:]) // the carry too
		return
	}
	w.fails.drop()
	if endErr != nil {
		w.lost.Add(uint64(carried))
		w.fail(endErr)
	} else {
		w.events.Add(uint64(carried))
	}
	w.bytes.Add(uint64(b.openLen))
	w.fileEvents = 0
	w.write(b, b.buf[b.openLen:])
}

// stalled is the error of a wait given up after d.
func stalled(d time.Duration) error {
	return fmt.Errorf("%w (%v): the sink is stalled", ErrTimeout, d)
}
