package goruntime

import (
	"bytes"
	"strconv"
	"sync"
	"time"

	"github.com/gotracer/tracer/internal/imported"
)

// A session links one converter to one tracer. It is the tracer's
// imported.Source: the converter commits converted events to pending, and
// the tracer's flusher drains pending at every flush, with its encoding
// lock held. What the flusher tells it of goroutines (their names, sort
// indexes, whether they recorded a span) decides which runtime tracks are
// kept and how they are named. mu guards everything but conv.
type session struct {
	o       options
	pid     int
	tracer  any           // the *tracer.Tracer, for imported.Wake
	conv    *converter    // used by the reader goroutine only
	drained chan struct{} // signalled by Drain, for a commit waiting for room

	mu      sync.Mutex
	pending []byte
	off     int    // drained up to here
	dropped uint64 // events dropped because pending stayed full: see commit
	stalled bool   // nothing drained for stallWait: commit drops at once
	shownDr uint64 // drops last written as the goruntime.dropped counter
	lastTs  []byte // ts of the last commit, for the drop counter
	names   map[uint64]*userTrack
	spanned map[uint64]bool
	shown   map[uint64]bool // goroutines whose track metadata is written
}

// userTrack is what the program set for a goroutine's span track.
type userTrack struct {
	name    string
	sort    int64
	hasName bool
	hasSort bool
}

func newSession(o options) *session {
	return &session{
		o:       o,
		drained: make(chan struct{}, 1),
		names:   map[uint64]*userTrack{},
		spanned: map[uint64]bool{},
		shown:   map[uint64]bool{},
	}
}

// Drain implements imported.Source: it hands the flusher whole lines of
// pending, about limit bytes at most.
func (s *session) Drain(b []byte, limit int) ([]byte, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped != s.shownDr && s.lastTs != nil {
		s.shownDr = s.dropped
		s.pending = append(s.pending, `{"name":"goruntime.dropped","ph":"C","ts":`...)
		s.pending = append(s.pending, s.lastTs...)
		s.pending = append(s.pending, `,"pid":`...)
		s.pending = strconv.AppendInt(s.pending, int64(s.pid), 10)
		s.pending = append(s.pending, `,"args":{"events":`...)
		s.pending = strconv.AppendUint(s.pending, s.dropped, 10)
		s.pending = append(s.pending, "}},\n"...)
	}
	rest := s.pending[s.off:]
	if len(rest) == 0 {
		return b, 0, false
	}
	n := len(rest)
	if n > limit {
		// End on a line: at the last one that fits, or after the first
		// if even that one does not.
		if i := bytes.LastIndexByte(rest[:max(limit, 1)], '\n'); i >= 0 {
			n = i + 1
		} else {
			n = bytes.IndexByte(rest, '\n') + 1
		}
	}
	chunk := rest[:n]
	b = append(b, chunk...)
	s.off += n
	s.stalled = false
	select {
	case s.drained <- struct{}{}: // a commit waiting for room
	default:
	}
	if s.off == len(s.pending) {
		s.pending, s.off = s.pending[:0], 0
	}
	return b, bytes.Count(chunk, []byte{'\n'}), s.off < len(s.pending)
}

// Named implements imported.Source. A goroutine whose tracks were already
// announced gets its metadata again, the user's values, after whatever the
// session wrote for it before.
func (s *session) Named(gid uint64, name string, hasName bool, sort int64, hasSort bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.names[gid]
	if u == nil {
		u = &userTrack{}
		s.names[gid] = u
	}
	if hasName {
		u.name, u.hasName = name, true
	}
	if hasSort {
		u.sort, u.hasSort = sort, true
	}
	if s.shown[gid] {
		s.pending = appendTracks(s.pending, s.pid, gid, u, true)
	}
}

// Spanned implements imported.Source.
func (s *session) Spanned(gid uint64) {
	s.mu.Lock()
	s.spanned[gid] = true
	s.mu.Unlock()
}

// keep implements tracks: by default, goroutines that recorded a span or
// were named.
func (s *session) keep(gid uint64) bool {
	if s.o.allGoroutine {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spanned[gid] || s.names[gid] != nil
}

// announce implements tracks. The metadata goes straight to pending under
// mu, not through the converter's buffer, so that it is ordered with what
// Named writes: whichever comes last in the file wins in both viewers.
func (s *session) announce(c *converter, gid uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shown[gid] = true
	u := s.names[gid]
	if u == nil {
		u = &userTrack{}
	}
	s.pending = appendTracks(s.pending, s.pid, gid, u, true)
}

// exited implements tracks: a goroutine that exited is forgotten, so the
// maps stay as small as the set of live goroutines.
func (s *session) exited(gid uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.names, gid)
	delete(s.spanned, gid)
	delete(s.shown, gid)
}

// stallWait is how long commit waits for the tracer to drain pending
// before it takes the tracer's sink for stalled and drops what it holds:
// twice the time after which the tracer drops its own events on a stalled
// sink.
const stallWait = time.Second

// commit moves the converter's output to pending. When pending is full it
// wakes the tracer's flusher and waits for it to drain, which holds up the
// reader and, through the pipe, the execution tracer, whose buffers wait
// in the runtime: nothing is lost while the tracer's sink keeps up. Only
// when nothing was drained for stallWait (the sink stalled, or the tracer
// was closed before stop) is the output dropped and counted, and later
// commits drop at once until the flusher drains again.
func (s *session) commit() {
	c := s.conv
	if len(c.buf) == 0 {
		return
	}
	s.mu.Lock()
	for !s.stalled && s.full(len(c.buf)) {
		s.mu.Unlock()
		imported.Wake(s.tracer)
		timer := time.NewTimer(stallWait)
		select {
		case <-s.drained:
		case <-timer.C:
			s.mu.Lock()
			s.stalled = true
			s.mu.Unlock()
		}
		timer.Stop()
		s.mu.Lock()
	}
	if s.full(len(c.buf)) {
		s.dropped += uint64(c.events)
	} else {
		s.pending = append(s.pending, c.buf...)
	}
	s.lastTs = append(s.lastTs[:0], lastTs(c.buf)...)
	s.mu.Unlock()
	c.buf, c.events = c.buf[:0], 0
}

// full reports whether n more bytes would take pending over maxPending.
// An empty pending takes any n: the converter's last output, which ends
// every open state at stop, can be larger than the bound on its own.
func (s *session) full(n int) bool {
	waiting := len(s.pending) - s.off
	return waiting > 0 && waiting+n > s.o.maxPending
}

// lastTs returns the ts of the last event in buf.
func lastTs(buf []byte) []byte {
	i := bytes.LastIndex(buf, []byte(`"ts":`))
	if i < 0 {
		return nil
	}
	ts := buf[i+5:]
	return ts[:bytes.IndexByte(ts, ',')]
}

// appendTracks appends the metadata of goroutine gid's two tracks: its
// span track and its runtime track, named alike ("worker 3" and "worker 3
// (runtime)"; "goroutine 7 (runtime)" when the program gave no name) and
// given the same sort index (the program's, or the goroutine id), so that
// the pair sort together in both viewers: chrome://tracing orders tracks by
// sort index, then name; Perfetto by its sort index hint.
//
// The span track is named only with the program's own name, never with a
// made-up one: a name the program set before Start and that was flushed
// before it is unknown here, and a later "goroutine 7" would win over it.
// Convert, whose output is merged with span traces that sort their own
// goroutines, leaves the span track alone (spanTrack false).
func appendTracks(b []byte, pid int, gid uint64, u *userTrack, spanTrack bool) []byte {
	name := u.name
	if !u.hasName {
		name = "goroutine " + strconv.FormatUint(gid, 10)
	}
	sort := int64(gid)
	if u.hasSort {
		sort = u.sort
	}
	b = appendMeta(b, pid, "thread_name", runtimeTid(gid), name+" (runtime)", 0, false)
	b = appendMeta(b, pid, "thread_sort_index", runtimeTid(gid), "", sort, true)
	if spanTrack {
		if u.hasName {
			b = appendMeta(b, pid, "thread_name", gid, name, 0, false)
		}
		b = appendMeta(b, pid, "thread_sort_index", gid, "", sort, true)
	}
	return b
}
