package tracer

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/atomic"
)

// TestErrorTallyIsBounded checks that a fault that lasts keeps constant
// memory: a disk full for a hundred thousand writes gives one line, with
// the count, and errors.Is still finds the cause.
func TestErrorTallyIsBounded(t *testing.T) {
	var e errorTally
	full := &fs.PathError{Op: "write", Path: "t.json", Err: syscall.ENOSPC}
	for range 100_000 {
		e.add(full)
	}
	for i := range 10 {
		e.add(fmt.Errorf("other error %d", i))
	}
	assert.Len(t, e.kinds, maxErrorKinds)
	err := e.take()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	assert.Len(t, lines, maxErrorKinds+1)
	assert.Equal(t, "write t.json: no space left on device (100000 failed writes)", lines[0])
	assert.Equal(t, "other error 0", lines[1])
	assert.Equal(t, "tracer: 7 more write errors of other kinds", lines[maxErrorKinds])
	assert.True(t, errors.Is(err, syscall.ENOSPC))
	assert.NoError(t, e.take(), "take starts again")
}

// failingWriter fails every write after the first (the header).
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n++; w.n == 1 {
		return len(p), nil
	}
	return 0, errors.New("write failed")
}

// TestReentrantCallsReturnAtOnce calls Flush, Close and Stop from the
// error handler, which runs on the writer goroutine: each returns
// ErrReentrant instead of waiting for itself, the tracer stays open, and
// the default tracer stays the default.
func TestReentrantCallsReturnAtOnce(t *testing.T) {
	got := make(chan []error, 1)
	var tr *Tracer
	var armed atomic.Bool // SetDefault may write (names set earlier) and fail first
	handler := func(error) {
		if !armed.Load() {
			return
		}
		select {
		case got <- []error{tr.Flush(), Flush(), tr.Close(), Stop()}:
		default:
		}
	}
	tr, err := NewWithWriter(&failingWriter{}, WithErrorHandler(handler), WithStopTimeout(0))
	require.NoError(t, err)
	require.NoError(t, SetDefault(tr))
	defer Stop()
	armed.Store(true)
	tr.Instant("x")
	tr.Flush() // the write fails: the handler runs
	errs := <-got
	for i, err := range errs {
		assert.ErrorIs(t, err, ErrReentrant, "call %d", i)
	}
	assert.Same(t, tr, Default(), "Stop from the handler left the default tracer alone")
	assert.True(t, tr.Enabled(), "Close from the handler did not close it")
}

// TestRefusedRotationKeepsOneB: a rotation whose new file the disk refused
// leaves the current file going on without the new file's head; a span
// open across it whose B a failed write had lost from that file, before
// the encoder knew, has its E name the B the head repeats. The file must
// then get that B, and only that one (torture seed 3725854739053478189:
// "E phase without a B before it" after a full tmpfs, rotation and lanes).
func TestRefusedRotationKeepsOneB(t *testing.T) {
	const (
		lostB = `{"name":"lost","ph":"B","ts":1.000,"pid":1,"tid":1},` + "\n"
		keptB = `{"name":"kept","ph":"B","ts":2.000,"pid":1,"tid":2},` + "\n"
		ends  = `{"name":"lost","ph":"E","ts":5.000,"pid":1,"tid":1},` + "\n" +
			`{"name":"kept","ph":"E","ts":6.000,"pid":1,"tid":2},` + "\n"
		opening = "[\n" + `{"name":"process_name","ph":"M","pid":1,"tid":0},` + "\n"
	)
	s := &recordingSink{failAfter: -1}
	w := &writer{}
	w.prepare(s, func(error) {}, &progressSignal{}, new(atomic.Uint64), realClock{})
	w.files = refusingCutter{}

	// Batch 0 holds kept's B; batch 1 holds lost's B, and its write fails
	// before it.
	b0 := &batch{seq: 0, buf: []byte(keptB), events: 1}
	w.write(b0, b0.buf)
	s.failAfter = 0
	b1 := &batch{seq: 1, buf: []byte(lostB), events: 1}
	w.write(b1, b1.buf)
	s.failAfter = -1

	// Batch 2 starts a new file, whose head repeats both B events; the
	// ends that follow name the repeats. The disk refuses the new file.
	head := opening + lostB + keptB
	b2 := &batch{seq: 2, op: opRotate, buf: []byte(head + ends), events: 5, openLen: len(opening), headLen: len(head)}
	b2.noteRepeat(endRef{start: len(opening), end: len(opening) + len(lostB), bBatch: 1, bOff: 0})
	b2.noteRepeat(endRef{start: len(opening) + len(lostB), end: len(head), bBatch: 0, bOff: 0})
	w.fails.unpair(b2)
	w.rotate(b2)

	assert.Equal(t, keptB+lostB+ends, s.got.String(), "the file: kept's B, then lost's, and both ends")
}

// TestFailuresOutlastALongPass: a full disk fails every write, and a pass
// may queue more batches than the writer's queue holds before the next
// one learns of the first failure. An E event the encoder queued then,
// whose B a failed write lost many failures earlier, must still become an
// instant: the failure is remembered until the encoder learned of it and
// the writer is past the batches it began before (TestReentry under load:
// "E "work" on track 14 without a B before it").
func TestFailuresOutlastALongPass(t *testing.T) {
	const (
		lostB = `{"name":"lost","ph":"B","ts":1.000,"pid":1,"tid":1},` + "\n"
		other = `{"name":"other","ph":"i","ts":2.000,"pid":1,"tid":2,"s":"t"},` + "\n"
		end   = `{"name":"lost","ph":"E","ts":5.000,"pid":1,"tid":1},` + "\n"
	)
	s := &recordingSink{failAfter: 0}
	w := &writer{}
	w.prepare(s, func(error) {}, &progressSignal{}, new(atomic.Uint64), realClock{})
	write := func(b *batch) {
		w.fails.unpair(b)
		w.write(b, b.buf)
	}

	// Batch 1 holds lost's B; it and the next 3*queueBatches writes fail
	// before the encoder takes a report.
	write(&batch{seq: 1, buf: []byte(lostB), events: 1})
	seq := uint64(2)
	for ; seq < 2+3*queueBatches; seq++ {
		write(&batch{seq: seq, buf: []byte(other), events: 1})
	}
	s.failAfter = -1 // room again
	b := &batch{seq: seq, buf: []byte(end), events: 1}
	b.noteEnd(endRef{start: 0, end: len(end), bBatch: 1, bOff: 0})
	write(b)
	assert.Equal(t, strings.Replace(end, `"ph":"E"`, `"ph":"i"`, 1), s.got.String(), "the end, as an instant")

	// The encoder learns of the failures with batch seq+1 under way: the
	// batches from it on name none of the lost events, and the writer
	// forgets the failures once past it.
	assert.Len(t, w.fails.take(seq+1), int(seq-1))
	write(&batch{seq: seq + 1, buf: []byte(other), events: 1})
	assert.NotEmpty(t, w.fails.recent, "batch seq+1 may name a lost B")
	write(&batch{seq: seq + 2, buf: []byte(other), events: 1})
	assert.Empty(t, w.fails.recent, "no batch from seq+2 on names one")
}

// recordingSink keeps what it is given; a write fails once failAfter is
// not negative, after that many bytes.
type recordingSink struct {
	got       strings.Builder
	failAfter int
}

func (s *recordingSink) Write(p []byte) (int, error) {
	if s.failAfter >= 0 {
		n := min(s.failAfter, len(p))
		s.got.Write(p[:n])
		return n, syscall.ENOSPC
	}
	return s.got.Write(p)
}

func (s *recordingSink) Close() error       { return nil }
func (s *recordingSink) traits() sinkTraits { return sinkTraits{} }

// refusingCutter refuses every new file, as a full disk does.
type refusingCutter struct{}

func (refusingCutter) ratio() float64 { return 1 }
func (refusingCutter) cut(end, opening []byte, events, endEvents int) (error, []error, error) {
	return nil, nil, syscall.ENOSPC
}
func (refusingCutter) deleted() uint64 { return 0 }
