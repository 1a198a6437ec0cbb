package tracer

import (
	"fmt"
	"io"
	"sync"

	"go.uber.org/atomic"
)

// A teeStream carries a tee's trace (see Tracer.Tee) from the writer
// goroutine to the tee's io.Writer. The writer goroutine copies each batch
// into it as encoded, and never waits for it: the io.Writer is user code
// (an HTTP response, a test's buffer) and runs on the stream's own
// goroutine, without any of the tracer's locks held. Past limit bytes
// waiting, the stream is cut: it takes nothing more, what it holds is
// still written (whole events, so the tee's trace reads as a file cut by
// a crash does), and Stop reports it.
type teeStream struct {
	w     io.Writer
	limit int

	mu       sync.Mutex
	cond     sync.Cond     // signalled when bytes come, the end comes, or w took some
	buf      []byte        // taken, not yet handed to w
	in, out  uint64        // bytes taken, bytes w took
	ended    bool          // its end is taken: nothing comes after it
	cut      bool          // it takes nothing more: it fell behind, or w failed
	err      error         // why it was cut
	finished bool          // its goroutine is done: w gets nothing more
	gid      atomic.Uint64 // its goroutine: see Tee.onOwnGoroutine
	done     chan struct{}

	from, to atomic.Int64 // its window in nanotime, as the flusher set it (to: 0 until it ends)
}

// setWindow notes the tee's window, from its start to its end (0 until
// it ends): see attachedTee.
func (s *teeStream) setWindow(from, to int64) {
	s.from.Store(from)
	s.to.Store(to)
}

func newTeeStream(w io.Writer, limit int) *teeStream {
	s := &teeStream{w: w, limit: limit, done: make(chan struct{})}
	s.cond.L = &s.mu
	return s
}

// put takes p, a batch as encoded, on the writer goroutine, without
// waiting.
func (s *teeStream) put(p []byte) {
	if len(p) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut || s.ended {
		return
	}
	if len(s.buf) > 0 && len(s.buf)+len(p) > s.limit {
		s.cutBy(fmt.Errorf("tracer: tee: its io.Writer fell behind the trace by more than %d bytes: "+
			"its trace stops there, as a file cut by a crash does (it still loads in both viewers)", s.limit))
		return
	}
	s.buf = append(s.buf, p...)
	s.in += uint64(len(p))
	s.cond.Broadcast()
}

// end takes the end of the tee's trace, and ends the stream once w has
// taken it.
func (s *teeStream) end(p []byte) {
	s.put(p)
	s.mu.Lock()
	s.ended = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// cutBy cuts the stream for err, under mu: see teeStream.
func (s *teeStream) cutBy(err error) {
	if !s.cut {
		s.cut, s.err = true, err
	}
	s.cond.Broadcast()
}

// run is the stream's goroutine: it hands what it takes to w until the
// stream ends or is cut.
func (s *teeStream) run() {
	defer close(s.done)
	s.gid.Store(goroutineID())
	var p []byte
	for {
		s.mu.Lock()
		for len(s.buf) == 0 && !s.ended && !s.cut {
			s.cond.Wait()
		}
		if len(s.buf) == 0 { // ended or cut, and w has it all
			s.finish()
			return
		}
		p, s.buf = s.buf, p[:0] // two buffers in turn
		s.mu.Unlock()

		err := s.call(p)

		s.mu.Lock()
		if err != nil {
			s.buf = s.buf[:0]
			s.cutBy(fmt.Errorf("tracer: tee: %w", err))
			s.finish()
			return
		}
		s.out += uint64(len(p))
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// finish ends run, under mu, which it releases.
func (s *teeStream) finish() {
	s.finished = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// call hands p to w, user code: a panic in it is a write that failed.
func (s *teeStream) call(p []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("its io.Writer's Write panicked: %v", r)
		}
	}()
	n, err := s.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return err
}

// cause returns why the stream was cut, nil if it was not.
func (s *teeStream) cause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// taken returns how many bytes the stream has taken so far.
func (s *teeStream) taken() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.in
}

// waitFor waits until w has taken n bytes, or the stream ended, and
// returns why it was cut, if it was.
func (s *teeStream) waitFor(n uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.out < n && !s.finished {
		s.cond.Wait()
	}
	return s.err
}

// abort cuts the stream for err, once its tracer can send it nothing more.
func (s *teeStream) abort(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended && !s.cut {
		s.cutBy(err)
	}
}
