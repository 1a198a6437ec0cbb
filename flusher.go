package tracer

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"go.uber.org/atomic"
)

// batchBytes is the size at which the flusher writes out what it has
// encoded and hands the slots back to the producers, mid-flush.
const batchBytes = 256 << 10

// The flusher owns encoding and writing. It runs under Tracer.flushMu, so
// the background goroutine, Flush and Close never drain at the same time.
type flusher struct {
	t       *Tracer
	sink    sink
	enc     encoder
	wall    time.Time // wall clock of ts 0
	cursors []cursor
	scratch [maxArgs / inlineArgs]record // an event whose slots wrap around the ring end

	open          openSpans
	pending       int // events encoded in enc.buf, not yet written
	reportedDrops uint64
	closed        atomic.Bool

	batch      uint64      // writes so far: tells which B events a failed write lost
	batchLimit int         // bytes to encode before a write: batchBytes, or less near a rotation
	rot        *rotator    // the sink, if the trace is rotated
	win        *window     // the sink, if the tracer is a flight recorder
	names      *trackNames // goroutine names to write again, with rot or win

	events, bytes, flushes, sinkErrors, lost, unmatched atomic.Uint64
}

// A cursor walks one ring during a flush: [pos, end) is what is left to read.
type cursor struct {
	r        *ring
	pos, end uint64
}

func (f *flusher) init(t *Tracer, s sink, wall time.Time) {
	f.t, f.sink, f.wall = t, s, wall
	f.enc = encoder{pid: processID, base: t.base, buf: make([]byte, 0, batchBytes+64<<10)}
	f.batchLimit = batchBytes
	f.rot, _ = s.(*rotator)
	f.win, _ = s.(*window)
	if f.rot != nil || f.win != nil {
		f.names = newTrackNames()
		f.enc.names = f.names
	}
}

// run is the flusher goroutine. It wakes often, cheaply, to check whether a
// ring passed its high-water mark, and flushes then or when the interval
// has passed. Polling keeps the record path free of channel operations.
func (t *Tracer) run() {
	defer close(t.done)
	poll := min(max(t.opts.flushInterval/20, time.Millisecond), 10*time.Millisecond)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			if now.Sub(last) < t.opts.flushInterval && !t.pastHighWater() {
				continue
			}
			last = now
			t.flushMu.Lock()
			t.flusher.flush() // errors go to the error handler
			t.flushMu.Unlock()
		}
	}
}

// pastHighWater reports whether any ring is at least half full.
func (t *Tracer) pastHighWater() bool {
	for _, r := range *t.rings.Load() {
		if r != nil && r.len() >= uint64(len(r.buf)/2) {
			return true
		}
	}
	return false
}

// writeHeader writes the opening of the file: "[", the process metadata
// with the wall-clock time of ts 0, and the drop counter at zero. Perfetto
// recognises a JSON trace only once it sees `[{"`, so this goes out at once.
// A flight recorder writes its header when a trace is taken.
func (f *flusher) writeHeader() error {
	if f.win != nil {
		return nil
	}
	f.appendHeader()
	f.appendDropCounter(f.t.base)
	_, err := f.sink.Write(f.enc.buf)
	f.enc.buf = f.enc.buf[:0]
	return err
}

// appendHeader starts a trace in the empty buffer: "[" and the process
// metadata with the wall-clock time of ts 0.
func (f *flusher) appendHeader() {
	o := &f.t.opts
	b := append(f.enc.buf[:0], "[\n"...)
	b = append(b, `{"name":"process_name","ph":"M","pid":`...)
	b = strconv.AppendInt(b, int64(processID), 10)
	b = append(b, `,"tid":0,"args":{"name":`...)
	b = appendString(b, o.processName)
	b = append(b, `,"ts0_wall":"`...)
	b = f.wall.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","ts0_unix_ns":`...)
	b = strconv.AppendInt(b, f.wall.UnixNano(), 10)
	b = append(b, "}},\n"...)
	if o.hasSort {
		b = append(b, `{"name":"process_sort_index","ph":"M","pid":`...)
		b = strconv.AppendInt(b, int64(processID), 10)
		b = append(b, `,"tid":0,"args":{"sort_index":`...)
		b = strconv.AppendInt(b, int64(o.processSort), 10)
		b = append(b, "}},\n"...)
	}
	if len(o.labels) > 0 {
		b = append(b, `{"name":"process_labels","ph":"M","pid":`...)
		b = strconv.AppendInt(b, int64(processID), 10)
		b = append(b, `,"tid":0,"args":{"labels":`...)
		b = appendString(b, strings.Join(o.labels, ","))
		b = append(b, "}},\n"...)
	}
	f.enc.buf = b
}

// appendDropCounter writes the "tracer.dropped" counter: the number of
// events that will never reach the file, dropped so far because a ring was
// full or lost in a write that failed.
func (f *flusher) appendDropCounter(ts int64) {
	b := append(f.enc.buf, `{"name":"tracer.dropped","ph":"C","ts":`...)
	b = appendMicros(b, ts-f.t.base)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(processID), 10)
	b = append(b, `,"args":{"events":`...)
	b = strconv.AppendUint(b, f.reportedDrops, 10)
	f.enc.buf = append(b, "}},\n"...)
}

// flush writes every event published before it started.
//
// Ordering: each ring is sorted by record.at, the clock reading taken while
// the writer was pinned. flush reads the clock once, as cut, and then merges
// the rings by at, taking only records with at < cut. A goroutine that
// moved between Ps has its events in several rings; the merge puts them in
// the order it recorded them. Taking only at < cut is what makes that
// order hold across flushes too: if a record with at < cut is taken, every
// earlier record of the same goroutine was published before that
// goroutine's clock read, hence before cut, hence before this flush loaded
// the rings' heads, so it is taken in this flush or was in an earlier one.
// Records at or after cut stay in their ring for the next flush.
//
// "Published before that goroutine's clock read" is not what storeRelease
// gives: on amd64 it is a plain store, which may still sit in the CPU's
// store buffer when the same thread reads the clock. It holds because the
// two records are in different rings only if the goroutine changed P in
// between, and the runtime hands a goroutine or a P between threads with
// locked (full-barrier) instructions, which drain the store buffer. The
// rest of the chain assumes the monotonic clock agrees across CPUs (Linux
// guarantees it) and that the head loads below happen after cut is read;
// on amd64 a later load may in principle be performed a few dozen cycles
// before RDTSC, far less than it takes a goroutine to change P. Within one
// ring, order needs none of this: it is the ring's order.
func (f *flusher) flush() error {
	cut := nanotime()
	f.cursors = f.cursors[:0]
	for _, r := range *f.t.rings.Load() {
		if r != nil {
			f.cursors = append(f.cursors, cursor{r: r, pos: r.tail.Load(), end: r.loadHead()})
		}
	}
	var errs error
	for {
		i, limit := f.nextCursor(cut)
		if i < 0 {
			break
		}
		c := &f.cursors[i]
		for c.pos < c.end {
			rec := &c.r.buf[c.pos&c.r.mask]
			if rec.at >= cut || rec.at > limit {
				break
			}
			if f.names != nil {
				f.names.note(rec)
			}
			c.pos += f.take(c, rec, cut)
			if len(f.enc.buf) >= f.batchLimit {
				errs = errors.Join(errs, f.write())
			}
		}
	}
	f.open.trim(maxOpenSpans)
	if f.win == nil { // a flight recorder writes spans whole: see FlightRecorder
		f.writeOldBegins(cut - int64(f.t.opts.flushInterval))
	}
	if drops := f.dropsSoFar(); drops != f.reportedDrops {
		f.reportedDrops = drops
		f.appendDropCounter(cut)
	}
	return errors.Join(errs, f.write())
}

// dropsSoFar counts the events that will never reach the file: dropped
// because a ring was full, or lost in a write that failed.
func (f *flusher) dropsSoFar() uint64 {
	drops := f.lost.Load()
	for _, r := range *f.t.rings.Load() {
		if r != nil {
			drops += r.dropped.Load()
		}
	}
	return drops
}

// take encodes the event whose first record is rec, at the cursor's
// position, and returns how many slots it used. A span start followed
// directly by its own end becomes one X event and uses both.
func (f *flusher) take(c *cursor, rec *record, cut int64) uint64 {
	n := slotsFor(int(rec.nargs))
	recs := f.slots(c.r, c.pos, n)
	switch rec.kind {
	case kindSpan, kindBegin:
		token := c.r.tokens[c.pos&c.r.mask].id
		if rec.kind == kindSpan && c.pos+n < c.end {
			// Tokens are per slot, so after the ring wrapped an older span
			// of another goroutine can hold the same one: match the
			// goroutine too.
			next := &c.r.buf[(c.pos+n)&c.r.mask]
			if next.kind == kindEnd && next.id == token && next.gid == rec.gid && next.at < cut {
				f.enc.complete(&recs[0], recs[1:], next.at-rec.at)
				f.pending++
				return n + 1
			}
		}
		f.push(&recs[0], recs[1:], token)
	case kindEnd:
		f.pop(rec)
	default:
		f.enc.event(&recs[0], recs[1:])
		f.pending++
	}
	return n
}

// nextCursor returns the cursor whose next record is the oldest one before
// cut, and the at of the oldest next record among the others: the merge
// takes from the first until it passes the second.
func (f *flusher) nextCursor(cut int64) (best int, limit int64) {
	best, bestAt, limit := -1, cut, int64(math.MaxInt64)
	for i := range f.cursors {
		c := &f.cursors[i]
		if c.pos == c.end {
			continue
		}
		at := c.r.buf[c.pos&c.r.mask].at
		if at < bestAt {
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

// slots returns the n records of the event at pos, copying them only when
// they wrap around the end of the ring.
func (f *flusher) slots(r *ring, pos, n uint64) []record {
	i := pos & r.mask
	if i+n <= uint64(len(r.buf)) {
		return r.buf[i : i+n]
	}
	for s := uint64(0); s < n; s++ {
		f.scratch[s] = r.buf[(pos+s)&r.mask]
	}
	return f.scratch[:n]
}

// write hands the encoded batch to the sink and gives the slots read so
// far back to the producers.
func (f *flusher) write() error {
	events := f.pending
	f.pending = 0
	var err error
	if len(f.enc.buf) > 0 {
		if f.names != nil {
			events += f.names.appendPending(&f.enc)
		}
		var n int
		n, err = f.sink.Write(f.enc.buf)
		f.bytes.Add(uint64(n))
		f.flushes.Inc()
		if err != nil {
			f.sinkErrors.Inc()
			f.lost.Add(uint64(events))
			f.reportedDrops = math.MaxUint64 // the counter may have been lost too: write it again
			f.t.opts.onError(err)
		} else {
			f.events.Add(uint64(events))
		}
		f.enc.buf = f.enc.buf[:0]
		f.afterWrite(err)
	}
	for _, c := range f.cursors {
		c.r.tail.Store(c.pos)
	}
	return err
}

// afterWrite keeps the file consistent after a write: when it failed, the
// spans whose B event it held are written again, as are goroutine names;
// with rotation, a full file is replaced.
func (f *flusher) afterWrite(err error) {
	if err != nil {
		f.open.unwrite(f.batch)
		if f.names != nil {
			f.names.newFile()
		}
	}
	f.batch++
	if f.names != nil {
		f.names.tick++
	}
	if f.rot != nil {
		f.rotate()
	}
}

// fail reports an error of the sink that no write returned.
func (f *flusher) fail(err error) {
	f.sinkErrors.Inc()
	f.t.opts.onError(err)
}

// close drains the rings a last time, ends the JSON array and closes the
// sink. The last event is the final drop counter, written without the
// comma, so a closed file is strict JSON.
func (f *flusher) close() error {
	if f.win != nil { // nothing to write: the window goes
		f.closed.Store(true)
		return f.sink.Close()
	}
	err := f.flush()
	// Spans still open were running when the trace stopped (Stop on a
	// signal or a panic): write them all as B events, however young.
	f.writeOldBegins(math.MaxInt64)
	err = errors.Join(err, f.write())
	f.closed.Store(true)
	f.appendEnd()
	_, werr := f.sink.Write(f.enc.buf)
	f.enc.buf = f.enc.buf[:0]
	return errors.Join(err, werr, f.sink.Close())
}

// appendEnd ends the trace: the drop counter, without a comma, and "]".
func (f *flusher) appendEnd() {
	f.reportedDrops = f.dropsSoFar()
	f.appendDropCounter(nanotime())
	b := f.enc.buf
	f.enc.buf = append(b[:len(b)-2], "\n]\n"...) // replace the last ",\n"
}

func (f *flusher) isClosed() bool { return f.closed.Load() }

func (f *flusher) stats() Stats {
	s := Stats{
		Events:     f.events.Load(),
		Bytes:      f.bytes.Load(),
		Flushes:    f.flushes.Load(),
		SinkErrors: f.sinkErrors.Load(),
		Lost:       f.lost.Load(),
		Unmatched:  f.unmatched.Load(),
	}
	if f.win != nil {
		s.Overwritten = f.win.overwritten.Load()
	}
	return s
}
