package tracer

import (
	"bytes"
	"encoding/json"
	"os"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// event is one trace event as a viewer reads it.
type event struct {
	Name  string         `json:"name"`
	Cat   string         `json:"cat"`
	Ph    string         `json:"ph"`
	Ts    float64        `json:"ts"`
	Dur   float64        `json:"dur"`
	Pid   int            `json:"pid"`
	Tid   uint64         `json:"tid"`
	S     string         `json:"s"`
	ID    json.Number    `json:"id"`
	ID2   map[string]any `json:"id2"`
	Scope string         `json:"scope"`
	Bp    string         `json:"bp"`
	Args  map[string]any `json:"args"`
}

// repair applies the documented repair to a file cut off by a crash, the
// one chrome://tracing applies itself: strip the trailing comma (and the
// white space around it) and close the array.
func repair(data []byte) []byte {
	data = bytes.TrimRight(data, " \t\r\n")
	data = bytes.TrimSuffix(data, []byte(","))
	return append(data[:len(data):len(data)], "\n]"...) // a copy: never write over the caller's bytes
}

// readClosed parses a cleanly closed trace as strict JSON, unrepaired.
func readClosed(t testing.TB, path string) []event {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, []byte("[\n{\"")), "file must start with [ and an event: %.40q", data)
	var evs []event
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&evs), "closed file must be strict JSON")
	return evs
}

// readCrashed parses a trace left by a killed process after repair.
func readCrashed(t testing.TB, data []byte) []event {
	t.Helper()
	// A kill in the middle of a write can leave the newlines that pad
	// events off page boundaries (pagealign.go) after the last event.
	require.True(t, bytes.HasSuffix(bytes.TrimRight(data, " \n"), []byte("},")), "the file must end on an event boundary: %q", data[max(0, len(data)-40):])
	var evs []event
	require.NoError(t, json.Unmarshal(repair(data), &evs), "repaired file must parse")
	return evs
}

// byPhase returns the events with phase ph.
func byPhase(evs []event, ph string) []event {
	var out []event
	for _, e := range evs {
		if e.Ph == ph {
			out = append(out, e)
		}
	}
	return out
}

// byName returns the events named name.
func byName(evs []event, name string) []event {
	var out []event
	for _, e := range evs {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// interval is a slice on a track, from an X event or a B/E pair.
type interval struct {
	name       string
	start, end float64
}

// checkTracks checks what both viewers need of every goroutine's track: B
// and E events form a stack in file order with matching names, and all
// slices, X and B/E alike, nest without overlapping. It returns the slices
// of each track.
func checkTracks(t testing.TB, evs []event) map[uint64][]interval {
	t.Helper()
	tracks := map[uint64][]interval{}
	open := map[uint64][]event{}
	for _, e := range evs {
		switch e.Ph {
		case "X":
			require.GreaterOrEqual(t, e.Dur, 0.0)
			tracks[e.Tid] = append(tracks[e.Tid], interval{e.Name, e.Ts, e.Ts + e.Dur})
		case "B":
			open[e.Tid] = append(open[e.Tid], e)
		case "E":
			st := open[e.Tid]
			require.NotEmpty(t, st, "E %q on track %d without a B before it", e.Name, e.Tid)
			b := st[len(st)-1]
			open[e.Tid] = st[:len(st)-1]
			require.Equal(t, b.Name, e.Name, "E must carry its B's name")
			require.GreaterOrEqual(t, e.Ts, b.Ts)
			tracks[e.Tid] = append(tracks[e.Tid], interval{e.Name, b.Ts, e.Ts})
		}
	}
	for tid, ivs := range tracks {
		sort.Slice(ivs, func(i, j int) bool {
			if ivs[i].start != ivs[j].start {
				return ivs[i].start < ivs[j].start
			}
			return ivs[i].end > ivs[j].end
		})
		var stack []interval
		for _, iv := range ivs {
			for len(stack) > 0 && stack[len(stack)-1].end <= iv.start {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				require.LessOrEqual(t, iv.end, top.end, "track %d: %q [%v,%v] overlaps %q [%v,%v]",
					tid, iv.name, iv.start, iv.end, top.name, top.start, top.end)
			}
			stack = append(stack, iv)
		}
	}
	return tracks
}

// readFile returns a file's text.
func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}
