package tracer

import (
	"bytes"
	"math"
	"slices"
	"sync"
)

// Failed writes.
//
// A write can fail part-way (a full disk, a broken pipe): the events
// before a point reach the sink, the rest are lost. The encoder learns of
// it only later, having queued more batches meanwhile, so keeping every E
// after its own B in the file takes three steps, all of them here:
//
//   - The writer reports each failed write (failed), and the flusher takes
//     the reports (take) before each pass: the spans still open whose B
//     event the write lost are written again (openSpans.unwrite), or
//     become X events when they end, and so are the goroutines' names and
//     the drop counter.
//   - An E event the write lost whose B is in the file is written again by
//     the writer itself, first thing with its next write (carry), before
//     the later events of its goroutine that the encoder queued meanwhile:
//     written again by the encoder, it would come after them, and end the
//     wrong span.
//   - An E event the encoder queued before it learned of the failure,
//     whose B the write lost, becomes an instant ("ph":"i", with the end's
//     args) as it is written (unpair): an E without its B breaks
//     chrome://tracing.
//
// The encoder notes, for each E event of a batch, where it is and where
// its B is (batch.noteEnd); a failure says which batch and how many of
// its bytes reached the sink. A failure is remembered until the writer is
// past every batch the encoder began before it learned of it: a full disk
// fails every write, and a pass may queue many batches before the next
// one takes the reports. The carry is the writer goroutine's; the
// failures are under mu, which the flusher takes them under.

// A failure is a write that did not deliver all of its batch.
type failure struct {
	seq       uint64 // the batch
	delivered int    // bytes of its buf that reached the sink: whole events
}

// An endRef is an E event in a batch, and where its B is; or a B event
// that a new file's head repeats, and where its earlier copy is.
type endRef struct {
	start, end int    // the event's line in the batch
	bBatch     uint64 // the batch that holds its B
	bOff       int    // where in it
}

// A pastFailure is a failed write, and when the encoder learned of it.
type pastFailure struct {
	failure
	// learnedAt is the batch the encoder had under way, or began next,
	// when it took the report: no later batch holds an E event whose B
	// the write lost. math.MaxUint64 until then.
	learnedAt uint64
}

// failures is the state of the protocol.
type failures struct {
	carry []byte // E events to write before the next batch: see failed

	mu       sync.Mutex
	recent   []pastFailure // the failed writes that batches to come may name: see unpair
	reported []failure     // for the flusher: see take
}

// failed notes that the write of b delivered only its first delivered
// bytes. It keeps, to write before the next batch, the E events of b that
// the write lost and whose B is in the file, and returns how many.
func (fs *failures) failed(b *batch, delivered int) (carried int) {
	for _, e := range b.ends {
		if e.start < delivered || e.bBatch == b.seq && e.bOff >= delivered || fs.lostB(e) {
			continue
		}
		fs.carry = append(fs.carry, b.buf[e.start:e.end]...)
		carried++
	}
	fl := failure{seq: b.seq, delivered: delivered}
	fs.mu.Lock()
	fs.recent = append(fs.recent, pastFailure{fl, math.MaxUint64})
	fs.reported = append(fs.reported, fl)
	fs.mu.Unlock()
	return carried
}

// refused keeps, to write with the carry, the B events that the head of
// b, a rotation's batch whose new file was refused, repeats of spans whose
// B a failed write lost from the file that goes on: their E events to
// come name the repeat (see openSpans.reopen), so the file must hold it.
// The spans whose B the file holds are not written again.
func (fs *failures) refused(b *batch) {
	for _, r := range b.repeats {
		if fs.lostB(r) {
			fs.carry = append(fs.carry, b.buf[r.start:r.end]...)
		}
	}
}

// carried drops the first n bytes of the carry, which a write delivered,
// and returns how many events they held.
func (fs *failures) carried(n int) (events int) {
	events = eventsIn(fs.carry[:n])
	fs.carry = fs.carry[:copy(fs.carry, fs.carry[n:])]
	return events
}

// drop empties the carry, written elsewhere (the end of a rotated file) or
// never (Close), and returns how many events it held.
func (fs *failures) drop() (events int) {
	events = eventsIn(fs.carry)
	fs.carry = fs.carry[:0]
	return events
}

// lostB reports whether the B of E e was in a write that failed before it.
func (fs *failures) lostB(e endRef) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.lostBLocked(e)
}

func (fs *failures) lostBLocked(e endRef) bool {
	for _, fl := range fs.recent {
		if fl.seq == e.bBatch && e.bOff >= fl.delivered {
			return true
		}
	}
	return false
}

// unpair turns into instants the E events of b whose B a failed write
// lost: the encoder queued b before it learned of the failure. The span's
// end stays in the trace, as an instant with its args. It forgets the
// failures that no batch from b on can name.
func (fs *failures) unpair(b *batch) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.recent = slices.DeleteFunc(fs.recent, func(fl pastFailure) bool { return fl.learnedAt < b.seq })
	if len(fs.recent) == 0 {
		return
	}
	for _, e := range b.ends {
		if e.bBatch < b.seq && fs.lostBLocked(e) {
			endToInstant(b.buf[e.start:e.end])
		}
	}
}

// endToInstant turns the E event on line into an instant, in place. Its
// phase is the first `"ph":"E"` of the line: the name before it, a JSON
// string, cannot hold an unescaped quote, and the args come after it.
func endToInstant(line []byte) {
	if i := bytes.Index(line, []byte(`"ph":"E"`)); i >= 0 {
		line[i+len(`"ph":"`)] = 'i'
	}
}

// take returns the failed writes reported since the last call, which
// the encoder learns of with seq the batch it has under way or begins
// next.
func (fs *failures) take(seq uint64) []failure {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i := range fs.recent {
		fs.recent[i].learnedAt = min(fs.recent[i].learnedAt, seq)
	}
	reported := fs.reported
	fs.reported = nil
	return reported
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
