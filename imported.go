package tracer

import (
	"errors"

	"github.com/gotracer/tracer/internal/imported"
)

// Events that come from outside the recording path, such as the Go
// runtime's execution trace converted by the goruntime package, reach the
// file through an imported.Source that the flusher drains at the end of
// each pass, after the events of the lanes. They carry their own
// timestamps and tracks and are of the kinds the viewers accept in any
// order (X, C, i, M), so where they fall in the file does not matter; they
// go out with the normal flushes, so a crash leaves them up to the last
// one. The source bounds its own memory. Nothing here touches the
// recording path: the flusher checks one field per event it encodes.

func init() {
	imported.Attach = attachImported
	imported.Detach = detachImported
	imported.AppendString = appendString
	imported.AppendMicros = appendMicros
}

// importState is the flusher's link to its source, guarded by flushMu.
type importState struct {
	src     imported.Source
	lastGid uint64 // the goroutine last reported to src.Spanned
}

// note tells the source about a span start or a track name that the
// flusher is about to encode.
func (s *importState) note(h *slot, rest []slot) {
	if s.src == nil {
		return
	}
	switch h.kind() {
	case kindSpan, kindBegin:
		if gid := h.gid(); gid != s.lastGid {
			s.lastGid = gid
			s.src.Spanned(gid)
		}
	case kindThreadName:
		s.src.Named(h.gid(), h.str(), true, 0, false)
	case kindThreadSort:
		s.src.Named(h.gid(), "", false, int64(rest[0].num), true)
	}
}

// drainImported appends what the source holds to the batches of this
// pass, starting new batches as they fill. With block false (a recording
// goroutine helping) it stops when no batch is free; the rest waits for
// the next pass.
func (f *flusher) drainImported(block bool) {
	src := f.imp.src
	if src == nil {
		return
	}
	for f.cur != nil {
		var n int
		var more bool
		f.enc.buf, n, more = src.Drain(f.enc.buf, f.batchLimit-len(f.enc.buf))
		f.pending += n
		if !more {
			return
		}
		f.send()
		f.startBatch(block)
	}
}

func attachImported(t any, src imported.Source) (int, int64, error) {
	tr, _ := t.(*Tracer)
	if tr == nil {
		return 0, 0, errors.New("tracer: no tracer to attach to")
	}
	tr.flushMu.Lock()
	defer tr.flushMu.Unlock()
	f := &tr.flusher
	if f.isClosed() || !tr.recording.Load() {
		return 0, 0, ErrClosed
	}
	if f.traits.window {
		// A dump is cut from the window by event count and age; events
		// that come a generation late would be cut at the wrong place.
		return 0, 0, errors.New("tracer: a flight recorder cannot take imported events")
	}
	defaults.mu.Lock()
	for gid, tn := range defaults.names {
		src.Named(gid, tn.name, tn.hasName, tn.sort, tn.hasSort)
	}
	defaults.mu.Unlock()
	f.imp = importState{src: src}
	return processID, tr.base, nil
}

func detachImported(t any, src imported.Source) {
	tr, _ := t.(*Tracer)
	if tr == nil {
		return
	}
	tr.flushMu.Lock()
	defer tr.flushMu.Unlock()
	if tr.flusher.imp.src == src {
		tr.flusher.imp = importState{}
	}
}
