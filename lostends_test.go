package tracer

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeptEndStampedAfterTheCut: an end kept aside whose clock reading is
// later than the cut of the pass that takes it (the flusher's thread
// preempted between its cut and takeKeptEnds, while a goroutine found the
// buffers full on a stalled sink) is written by a later pass, though no
// other end is kept after it. It used to wait for the next end kept, which
// on a sink that recovered never came: its B lasted to the end of the
// trace (TestGOMAXPROCSChurn, once in a soak).
func TestKeptEndStampedAfterTheCut(t *testing.T) {
	if endCode == 0 {
		t.Skip("this Go lays out method values otherwise: the test cannot find the end's token")
	}
	tr, path := newTestTracer(t, withClock(newTestClock()))
	end := tr.LongSpan("kept")
	tok := (*(**endClosure)(unsafe.Pointer(&end))).tok
	gid := goroutineID()
	require.NoError(t, tr.Flush(), "the B is in the file")

	// What the end function does when it finds no room on a stalled sink
	// (see put and keepEnd), with its clock reading past the cut of the
	// next pass.
	require.True(t, swapWord(&tok.state, held(gid), free(loadAcquire(&tok.l.starts))))
	at := rawAfter(50 * time.Millisecond)
	tr.keepEnd(gid, tok.id, at)
	require.NoError(t, tr.Flush()) // takes the end; its reading cannot be converted yet
	for now() <= at {
		runtime.Gosched()
	}
	tr.Instant("after")
	require.NoError(t, tr.Close())

	st := tr.Stats()
	assert.Zero(t, st.Late+st.Unmatched+st.Forgotten+st.Dropped)
	evs := readClosed(t, path)
	checkTracks(t, evs)
	kept := byName(evs, "kept")
	require.Len(t, kept, 2, "the span's B and E")
	assert.Equal(t, []string{"B", "E"}, []string{kept[0].Ph, kept[1].Ph})
	after := byName(evs, "after")
	require.Len(t, after, 1)
	assert.Less(t, kept[1].Ts, after[0].Ts, "the E is where it was stamped, before what came after it")
}

// rawAfter returns the raw clock reading (see now) d from now.
func rawAfter(d time.Duration) uint64 {
	if loadAcquire(&counterOn) == 0 {
		return now() + uint64(d)
	}
	a := readAnchor()
	for nanotime()-a.ns < int64(time.Millisecond) {
	}
	b := readAnchor()
	return uint64(b.tick + (b.tick-a.tick)*int64(d)/(b.ns-a.ns))
}
