package tracer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeepPairs(t *testing.T) {
	lines := []string{
		`{"name":"op","cat":"db","ph":"e","ts":1.000,"pid":1,"tid":1,"id2":{"local":"0x1"}},`,                // began before the window
		`{"name":"op","cat":"db","ph":"n","ts":1.000,"pid":1,"tid":1,"id2":{"local":"0x1"}},`,                // likewise
		`{"name":"op","cat":"db","ph":"b","ts":2.000,"pid":1,"tid":1,"id2":{"local":"0x2"},"args":{"a":1}},`, // stays open
		`{"name":"op","cat":"http","ph":"b","ts":2.500,"pid":1,"tid":1,"id2":{"local":"0x3"}},`,
		`{"name":"op","cat":"http","ph":"n","ts":2.600,"pid":1,"tid":1,"id2":{"local":"0x3"}},`,
		`{"name":"op","cat":"http","ph":"e","ts":2.700,"pid":1,"tid":1,"id2":{"local":"0x3"},"args":{"ph":"b"}},`,
		`{"name":"op","cat":"db","ph":"e","ts":2.800,"pid":1,"tid":1,"id2":{"local":"0x3"}},`, // another category: no begin
		`{"name":"h","ph":"f","ts":3.000,"pid":1,"tid":1,"id":7,"bp":"e"},`,                   // started before the window
		`{"name":"h","ph":"s","ts":3.100,"pid":1,"tid":1,"id":8},`,
		`{"name":"h","ph":"t","ts":3.200,"pid":1,"tid":2,"id":8},`,
		`{"name":"h","ph":"f","ts":3.300,"pid":1,"tid":3,"id":8,"bp":"e"},`,
		`{"name":"h \"ph\":\"f\"","ph":"f","ts":3.400,"pid":1,"tid":3,"id":9,"bp":"e"},`, // a name that looks like a field
		`{"name":"x","ph":"X","ts":4.000,"dur":1.000,"pid":1,"tid":1},`,
	}
	// The window's batches: a pair may straddle two.
	var src [][]byte
	for _, part := range [][]string{lines[:3], lines[3:7], lines[7:]} {
		src = append(src, []byte(strings.Join(part, "\n")+"\n"))
	}
	kept, ends, left := keepPairs(src, []byte("9.000"))
	out := append(bytes.Join(kept, nil), ends...)
	assert.Equal(t, 5, left)
	want := strings.Join([]string{
		lines[2], lines[3], lines[4], lines[5], lines[8], lines[9], lines[10], lines[12],
		`{"name":"op","cat":"db","ph":"e","ts":9.000,"pid":1,"tid":1,"id2":{"local":"0x2"}},`,
	}, "\n") + "\n"
	assert.Equal(t, want, string(out))
}

// TestFlightRecorderKeepsPairsWhole is issue 10 item 10: the window's edge
// cut async operations and flows, leaving an end without its begin, which
// chrome://tracing warns about and drops. A trace taken now holds whole
// pairs: every e, n, t and f has its b or s, and an operation still open
// ends when the trace is taken.
func TestFlightRecorderKeepsPairsWhole(t *testing.T) {
	r := newFlightRecorder(t, FlightRecorderConfig{MaxEvents: 40})
	early := r.AsyncBegin("early") // its b leaves the window
	flow := r.FlowBegin("handoff") // its s too
	for i := range 100 {
		r.Instant("filler", Int("i", i))
		if i%10 == 0 {
			require.NoError(t, r.Flush()) // the window drops whole batches' worth of lines
		}
	}
	early.Instant("late instant")
	early.End()
	receiver := r.Span("receiver")
	flow.End()
	receiver()
	open := r.AsyncBegin("still open")
	open.Instant("progress")
	evs := takeTrace(t, r)
	assert.Empty(t, byName(evs, "early"), "the end of an operation whose begin left the window is left out")
	assert.Empty(t, byName(evs, "late instant"))
	assert.Empty(t, byName(evs, "handoff"))
	var phases []string
	for _, e := range byName(evs, "still open") {
		phases = append(phases, e.Ph)
	}
	assert.Equal(t, []string{"b", "e"}, phases, "an open operation ends when the trace is taken")
	assert.Equal(t, 1, checkAsync(t, evs))
}
