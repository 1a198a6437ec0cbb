package tracer

import "fmt"

// Stats counts what a Tracer did with the events it was given.
type Stats struct {
	Events     uint64 // events written to the sink
	Bytes      uint64 // bytes written to the sink, before compression
	Flushes    uint64 // batches written
	Dropped    uint64 // events dropped: the buffers were full and the sink stalled
	Late       uint64 // events recorded after Close began, never written
	SinkErrors uint64 // failed writes; their events are in Lost
	Lost       uint64 // events encoded but lost because the sink failed
	Unmatched  uint64 // span end calls that ended nothing: a second call, a call on another goroutine, or the end of a forgotten span (see Span); a SpanHandle's second End
	Forgotten  uint64 // open spans not written: ended out of order, or past the bound on open spans (see Span)
	Refused    uint64 // events and counter series left out because no viewer can show them (see Counter)

	// Deleted counts the events of Events that were in files WithMaxFiles
	// removed: Events minus Deleted are the events in the files on disk.
	Deleted uint64

	// Overwritten counts the events a FlightRecorder pushed out of its
	// window to make room for newer ones, and, once it is closed, those
	// the window held and the spans still open: the point of the window,
	// not a loss like Dropped.
	Overwritten uint64
}

// dropReport is the error Close reports when events were dropped.
func dropReport(st Stats) error {
	share := float64(st.Dropped) / float64(st.Dropped+st.Events) * 100
	return fmt.Errorf("%d of %d events (%.2g%%) were dropped because the sink stalled while the buffers were full; "+
		"WithLossless makes recording wait for the sink instead, and WithBufferLimit gives the buffers more room",
		st.Dropped, st.Dropped+st.Events, share)
}
