//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gotracer/tracer"
)

// User code the tracer runs: Stringer args, the error handler, the
// io.Writer of NewWithWriter. Each does what the tracer's config says,
// and tallies what the tracer's calls returned.

// A hookStringer is a Stringer arg whose String does what mode says. It
// may be on a hot path (every job of a pool): what costs time, a flush, a
// sleep, it does at most every 20ms.
type hookStringer struct {
	e    *tenv
	mode stringerMode
	n    atomic.Uint64
	last atomic.Int64 // when it last flushed or slept
	text string
}

// due reports whether 20ms passed since String last flushed or slept.
func (s *hookStringer) due() bool {
	t, last := now(), s.last.Load()
	return t-last >= int64(20*time.Millisecond) && s.last.CompareAndSwap(last, t)
}

func (s *hookStringer) String() string {
	k := s.n.Add(1)
	t := s.e.tr()
	if t == nil {
		return s.text
	}
	switch s.mode {
	case strRecords:
		t.Instant("from String", s.e.hook.id(clHook))
	case strFlushes:
		if s.due() {
			m := s.e.mark(t)
			s.e.call("String Flush", t.Flush(), m)
		}
	case strCloses:
		if s.e.mayClose.Load() && s.e.closedByString.CompareAndSwap(false, true) {
			m := s.e.mark(t)
			s.e.call("String Close", t.Close(), m)
		}
	case strPanics:
		if k%3 == 0 {
			panic("torture: String panics")
		}
	case strSleeps:
		if s.due() {
			time.Sleep(2 * time.Millisecond)
		}
	}
	return s.text
}

// handler returns the error handler of the tracer self points to.
func (e *tenv) handler(self *atomic.Pointer[tracer.Tracer]) func(error) {
	return func(err error) {
		e.noteHandlerError(err)
		t := self.Load()
		if t == nil {
			return
		}
		switch e.cfg.Handler {
		case hRecords:
			t.Instant("from handler", e.hook.id(clHook))
		case hSlog:
			c := clHook
			if e.cfg.Categories {
				c = clOptional // the record's level is its category
			}
			e.logger(t).Error("tracer error", slog.Int64("id", e.hook.idValue(c)), slog.String("error", err.Error()))
		case hFlush:
			m := e.mark(t)
			e.call("handler Flush", t.Flush(), m)
		case hClose:
			m := e.mark(t)
			e.call("handler Close", t.Close(), m)
		case hStop:
			m := e.mark(tracer.Default())
			e.call("handler Stop", tracer.Stop(), m)
		case hPanic:
			panic("torture: the error handler panics")
		}
	}
}

var errWriterFault = errors.New("torture: the writer fails")

// A faultWriter is the io.Writer of a NewWithWriter tracer: it keeps what
// it takes in a file, and fails, stalls or writes short between from and
// to.
type faultWriter struct {
	f        *os.File
	mode     writerFault
	from, to int64 // unix ns
	e        *tenv
	records  bool
	self     *atomic.Pointer[tracer.Tracer]
	n        int
}

func (w *faultWriter) Write(p []byte) (int, error) {
	if w.records {
		if t := w.self.Load(); t != nil {
			defer t.Span("write", w.e.hook.spanID(clHook))()
		}
	}
	w.n++
	if t := now(); t >= w.from && t < w.to {
		switch w.mode {
		case faultFail:
			k := (w.n * 7919) % max(1, len(p)) // part of it, anywhere
			n, _ := w.f.Write(p[:k])
			return n, errWriterFault
		case faultStall:
			time.Sleep(time.Duration(w.to - t))
		case faultShort:
			n, _ := w.f.Write(p[:len(p)/2])
			return n, io.ErrShortWrite
		}
	}
	return w.f.Write(p)
}

// readFifo opens the named pipe at path for reading, which lets New
// return, and copies what it reads to out until the writer closes it, or
// until dies, when it closes its end as a reader that dies does.
func readFifo(path, out string, dies time.Duration, done chan<- struct{}) {
	defer close(done)
	dst, err := os.Create(out)
	if err != nil {
		return
	}
	defer dst.Close()
	src, err := os.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	if dies > 0 {
		t := time.AfterFunc(dies, func() { src.Close() })
		defer t.Stop()
	}
	io.Copy(dst, src)
	src.Close()
}

// A filler fills the disk of the tracer's directory and empties it again:
// a real tmpfs, or, where mounting one is refused, the file size limit.
type filler struct {
	dir   string
	fsize bool
	full  bool
}

func (f *filler) fill() {
	if f.full {
		return
	}
	f.full = true
	if f.fsize {
		setFsize(4 << 10)
		return
	}
	b, err := os.Create(f.ballast())
	if err != nil {
		return
	}
	defer b.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := b.Write(chunk); err != nil {
			return
		}
	}
}

func (f *filler) empty() {
	if !f.full {
		return
	}
	f.full = false
	if f.fsize {
		setFsize(-1)
		return
	}
	os.Remove(f.ballast())
}

func (f *filler) ballast() string { return f.dir + "/ballast" }

// signalIgnoreXFSZ ignores SIGXFSZ, so that a write past the file size
// limit fails with EFBIG rather than killing the process.
func signalIgnoreXFSZ() { signal.Ignore(syscall.SIGXFSZ) }

// setFsize sets the soft limit on file size (RLIMIT_FSIZE), -1 for
// its hard limit.
func setFsize(n int64) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &rl); err != nil {
		return
	}
	if n < 0 {
		rl.Cur = rl.Max
	} else {
		rl.Cur = uint64(n)
	}
	syscall.Setrlimit(syscall.RLIMIT_FSIZE, &rl)
}

// A callMark is where a call that may wait for the tracer's writer began:
// when, and how many bytes the tracer had written.
type callMark struct {
	at    time.Time
	t     *tracer.Tracer
	bytes uint64
}

// mark returns a callMark for a call on t (nil: none yet).
func (e *tenv) mark(t *tracer.Tracer) callMark {
	m := callMark{at: time.Now(), t: t}
	if t != nil {
		m.bytes = t.Stats().Bytes
	}
	return m
}

// slowSinkBytes is what the writer must have written while a call waited
// for it for an ErrTimeout to be a slow sink rather than a stalled one.
const slowSinkBytes = 1 << 20

// call tallies what a call the workload or a hook made returned, and
// reports the answer that means a defect: ErrTimeout ("the sink is
// stalled") from a sink that never stalls, while the writer wrote next to
// nothing. (A writer that wrote all along was slow, not stalled: the
// tracer had more to write than the sink takes in the stop timeout, as a
// rotation every 4 KiB that repeats thousands of leaked spans' B events
// at the top of every file does. ErrTimeout is then the documented
// answer.)
func (e *tenv) call(what string, err error, m callMark) {
	took := time.Since(m.at)
	k := errKind(err)
	var wrote uint64
	if m.t != nil {
		wrote = m.t.Stats().Bytes - m.bytes
	}
	slow := k == "ErrTimeout" && wrote >= slowSinkBytes
	if slow {
		k += " (slow sink)"
	}
	e.count(what + ": " + k)
	if k == "ErrTimeout" && !e.mayStall() {
		e.c.rep.fail("t%d: %s returned ErrTimeout (\"the sink is stalled\") after %v, the writer having written %d bytes meanwhile, though this sink never stalls", e.idx, what, took.Round(time.Millisecond), wrote)
	}
}

// count counts one answer of a call, "what: kind".
func (e *tenv) count(answer string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.calls == nil {
		e.calls = map[string]int{}
	}
	e.calls[answer]++
}

// mayStall reports whether the tracer's sink may stall, or user code it
// runs may hold it up for long: the only cases where ErrTimeout is right.
func (e *tenv) mayStall() bool {
	return e.cfg.Fault == faultStall || e.cfg.Stringer == strSleeps
}

func (e *tenv) noteHandlerError(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.herrs == nil {
		e.herrs = map[string]bool{}
	}
	if len(e.herrs) < 40 {
		e.herrs[fmt.Sprint(err)] = true
	}
}
