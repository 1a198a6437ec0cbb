package tracer

import (
	"errors"

	"github.com/gotracer/tracer/internal/imported"
)

// Events that come from outside the recording path, such as the Go
// runtime's execution trace converted by the goruntime package, reach the
// file through an imported.Source that the flusher drains at the end of
// each pass, after the events of the chains. They carry their own
// timestamps and tracks and are of the kinds the viewers accept in any
// order (X, C, i, M), so where they fall in the file does not matter; they
// go out with the normal flushes, so a crash leaves them up to the last
// one. The source bounds its own memory. Nothing here touches the
// recording path: the flusher checks one field per event it encodes.

func init() {
	imported.Attach = attachImported
	imported.Detach = detachImported
	imported.Wake = wakeForImported
}

// attachImported attaches src to the Tracer t, for imported.Attach.
func attachImported(t any, src imported.Source) (int, int64, error) {
	tr, _ := t.(*Tracer)
	if tr == nil {
		return 0, 0, errors.New("tracer: no tracer to attach to")
	}
	tr.flusher.mu.Lock()
	defer tr.flusher.mu.Unlock()
	f := &tr.flusher
	if f.isClosed() || !tr.recording.Load() {
		return 0, 0, ErrClosed
	}
	if f.shared != nil {
		return 0, 0, errors.New("tracer: the Go runtime's view draws goroutine tracks, which a tracer WithLanes does not have")
	}
	if f.traits.window {
		// A dump is cut from the window by event count and age; events
		// that come a generation late would be cut at the wrong place.
		return 0, 0, errors.New("tracer: a flight recorder cannot take imported events")
	}
	pkgState.mu.Lock()
	for gid, tn := range pkgState.names {
		src.Named(gid, tn.name, tn.hasName, tn.sort, tn.hasSort)
	}
	pkgState.mu.Unlock()
	f.imp.attach(src)
	return processID, tr.base, nil
}

// wakeForImported asks the flusher for a pass now, without waiting for it.
func wakeForImported(t any) {
	if tr, _ := t.(*Tracer); tr != nil {
		select {
		case tr.wake <- struct{}{}:
		default:
		}
	}
}

func detachImported(t any, src imported.Source) {
	tr, _ := t.(*Tracer)
	if tr == nil {
		return
	}
	tr.flusher.imp.detach(src)
}
