package tracer

import (
	"bytes"
	"errors"
	"fmt"
	"math"
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
	opWrite  batchOp = iota // write buf
	opRotate                // start a new file: end to the old one, then buf, which starts with the new file's head
	opSync                  // write nothing: send the errors so far on done once everything before it is written
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
	ends    []endRef // its E events
}

// An endRef is an E event in a batch, and where its B is.
type endRef struct {
	start, end int    // the E's line in the batch
	phase      int    // where in the batch its phase letter is
	bBatch     uint64 // the batch that holds its B
	bOff       int    // where in it
}

// A writer is the goroutine that hands encoded batches to the sink, and
// what the encoder and the recording goroutines know of it. It owns the
// sink: the flusher only queues batches, and reads the counters.
type writer struct {
	sink     sink
	files    fileCutter      // the sink's rotation, if it rotates
	onError  func(error)     // the user's error handler
	progress *progressSignal // told when a batch is written: room for the waiting
	gid      *atomic.Uint64  // where to say which goroutine it is: see reentry.go

	queue  chan *batch
	free   chan *batch
	exited chan struct{}

	lostFrom []failure // the last failed writes: see unpair
	carry    []byte    // E events to write before the next batch: see carryEnds
	opening  []byte    // the current file's opening, not written yet: see rotate
	joined   []byte    // opening, carry and the next batch, for one write

	fileEvents int // events written to the current file: see rotate

	busySince atomic.Int64 // nanotime when the write under way started, 0 when none is

	mu     sync.Mutex
	failed []failure  // batches whose write failed, for the encoder to unwrite
	errs   errorTally // write errors since the last sync

	events, bytes, flushes, sinkErrors, lost atomic.Uint64
	ratio                                    atomic.Uint64 // float64 bits: file bytes per byte encoded, for rotation
}

func (w *writer) prepare(s sink, onError func(error), progress *progressSignal, gid *atomic.Uint64) {
	w.sink, w.files, w.onError, w.progress, w.gid = s, s.traits().files, onError, progress, gid
	w.queue = make(chan *batch, queueBatches+4) // room for syncs besides the batches
	w.free = make(chan *batch, queueBatches)
	for range queueBatches {
		w.free <- &batch{}
	}
	w.exited = make(chan struct{})
	w.ratio.Store(math.Float64bits(1))
}

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
	return since != 0 && nanotime()-since > int64(d)
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
		case opRotate:
			w.unpair(b)
			w.rotate(b)
		default:
			w.unpair(b)
			w.write(b, b.buf)
		}
		b.buf, b.end = b.buf[:0], b.end[:0]
		w.free <- b
		w.progress.broadcast()
	}
}

// finish waits for the writer goroutine to write what is queued, closes
// the sink and returns the write errors since the last sync and the
// sink's Close error. The queue must hold nothing more to come.
func (w *writer) finish() error {
	close(w.queue)
	<-w.exited
	w.lost.Add(uint64(eventsIn(w.carry))) // no write came after the one that failed
	w.mu.Lock()
	err := w.errs.take()
	w.mu.Unlock()
	return errors.Join(err, w.sink.Close())
}

// write writes p, the events of b, to the sink, after the opening of a
// new file whose first write failed (see rotate) and the E events a
// failed write carried over (see carryEnds).
func (w *writer) write(b *batch, p []byte) {
	no, nc := len(w.opening), len(w.carry)
	if len(p) == 0 && no == 0 {
		return
	}
	q := p
	if no+nc > 0 {
		w.joined = append(append(append(w.joined[:0], w.opening...), w.carry...), p...)
		q = w.joined
	}
	w.busySince.Store(nanotime())
	n, err := w.sink.Write(q)
	w.busySince.Store(0)
	w.bytes.Add(uint64(n))
	w.flushes.Inc()
	if no > 0 {
		// A sink takes whole events or nothing of a failed write, so the
		// opening is written whole, before anything else, or not at all.
		if n < no {
			w.opening = w.opening[:copy(w.opening, w.opening[n:])]
			n = 0
		} else {
			w.opening = w.opening[:0]
			n -= no
		}
	}
	if nc > 0 {
		sent := min(n, nc)
		w.delivered(eventsIn(w.carry[:sent]))
		w.carry = w.carry[:copy(w.carry, w.carry[sent:])]
		n -= sent
	}
	if err != nil {
		w.sinkErrors.Inc()
		w.mu.Lock()
		if n < len(p) {
			// The events before n reach the sink (a stream completes a cut
			// event with its next write: see writerSink); the rest are
			// lost, and the encoder writes again what it must.
			fl := failure{seq: b.seq, delivered: len(b.buf) - len(p) + n}
			delivered := min(eventsIn(p[:n]), b.events)
			carried := w.carryEnds(b, fl.delivered)
			w.delivered(delivered)
			w.lost.Add(uint64(max(b.events-delivered-carried, 0)))
			w.failed = append(w.failed, fl)
			w.lostFrom = append(w.lostFrom[max(0, len(w.lostFrom)-recentFailures+1):], fl)
		} else {
			w.delivered(b.events)
		}
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

// delivered counts n events written to the sink.
func (w *writer) delivered(n int) {
	w.events.Add(uint64(n))
	w.fileEvents += n
}

// carryEnds keeps, to write before the next batch, the E events of b that
// its failed write lost (those from delivered on) and whose B is in the
// file, and returns how many. An E without its B breaks chrome://tracing,
// a B without its E draws a span over all that follows on its track, and
// the encoder, which learns of the failure only later, has queued more
// batches meanwhile: written again by the encoder, the E would come after
// the goroutine's later events, and end the wrong span.
func (w *writer) carryEnds(b *batch, delivered int) int {
	n := 0
	for _, e := range b.ends {
		if e.start < delivered || e.bBatch == b.seq && e.bOff >= delivered || w.lostB(e) {
			continue
		}
		w.carry = append(w.carry, b.buf[e.start:e.end]...)
		n++
	}
	return n
}

// lostB reports whether the B of E e was in a write that failed before it.
func (w *writer) lostB(e endRef) bool {
	for _, fl := range w.lostFrom {
		if fl.seq == e.bBatch && e.bOff >= fl.delivered {
			return true
		}
	}
	return false
}

// fail reports an error of the sink that no write returned, such as a
// failed rotation: the events still go to the current file, so it is not
// one of the write errors Flush returns.
func (w *writer) fail(err error) {
	w.sinkErrors.Inc()
	w.onError(err)
}

// recentFailures is how many failed writes the writer remembers for
// unpair: the batches queued before the encoder learns of a failure.
const recentFailures = queueBatches + 1

// unpair turns into instants ("i") the E events of b whose B a failed
// write lost: the encoder queued b before it learned of the failure, and
// an E without its B breaks chrome://tracing. The span's end stays in
// the trace, as an instant with its args; the encoder writes the spans
// still open again (see flusher.takeFailures).
func (w *writer) unpair(b *batch) {
	for _, e := range b.ends {
		if e.bBatch < b.seq && w.lostB(e) {
			b.buf[e.phase] = 'i'
		}
	}
}

// A failure is a write that did not deliver all of its batch.
type failure struct {
	seq       uint64 // the batch
	delivered int    // bytes of its buf that reached the sink: whole events
}

// eventsIn counts the events in p, whole lines that each start with '{'
// (padding lines are empty).
func eventsIn(p []byte) int {
	n := bytes.Count(p, []byte("\n{"))
	if len(p) > 0 && p[0] == '{' {
		n++
	}
	return n
}

// takeFailures returns the batches whose write failed since the last call.
func (w *writer) takeFailures() []failure {
	w.mu.Lock()
	defer w.mu.Unlock()
	failed := w.failed
	w.failed = nil
	return failed
}

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
// current file and writes the batch to the new one. If no new file could
// be started, the current file goes on, and the batch's events are
// written to it without the new file's head.
//
// A new file must start with its opening ("[" and the process metadata)
// whatever becomes of the batch's write: on a full disk it fails like any
// other. So the opening is kept until a write delivers it, and goes
// before anything else the file gets; while it waits, the file is empty,
// and the next rotation writes to it rather than ending an empty file.
// The rest of a lost head the encoder writes again, as it does for any
// failed write: the drop counter, the goroutines' names, the B events of
// the spans still open (see openSpans.reopen).
func (w *writer) rotate(b *batch) {
	if len(w.opening) == 0 {
		end, carried := b.end, eventsIn(w.carry)
		if carried > 0 {
			// The carried E events end spans of the file being ended.
			end = append(w.carry, b.end...)
		}
		endErr, errs, err := w.files.cut(end, w.fileEvents, carried)
		for _, err := range errs {
			w.fail(err)
		}
		if err != nil {
			w.fail(err)
			w.write(b, b.buf[b.headLen:]) // the carry too: the file goes on
			return
		}
		if endErr != nil {
			w.lost.Add(uint64(carried))
			w.fail(endErr)
		} else {
			w.events.Add(uint64(carried))
		}
	} else {
		// The current file is empty: it starts with this head instead.
		// Its carry, if any, ends spans whose B events are in no file.
		w.lost.Add(uint64(eventsIn(w.carry)))
	}
	w.carry, w.fileEvents = w.carry[:0], 0
	w.opening = append(w.opening[:0], b.buf[:b.openLen]...)
	w.write(b, b.buf[b.openLen:])
}

// stalled is the error of a wait given up after d.
func stalled(d time.Duration) error {
	return fmt.Errorf("%w (%v): the sink is stalled", ErrTimeout, d)
}
