package tracer

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLanesInAFlightRecording takes a flight recorder's dump of a server
// drawn on lanes: every lane it holds events of is named, and nests.
func TestLanesInAFlightRecording(t *testing.T) {
	r, err := NewFlightRecorder(FlightRecorderConfig{MaxAge: time.Minute}, WithLanes(), withClock(newTestClock()))
	require.NoError(t, err)
	defer r.Tracer().Close()
	serveOnLanes(r.Tracer(), 200, 5)
	path := filepath.Join(t.TempDir(), "dump.json")
	require.NoError(t, r.WriteFile(path))
	evs := tracecheck.Read(t, path)
	tracks := tracecheck.Tracks(t, evs)
	require.NotEmpty(t, tracks)
	named := map[uint64]string{}
	for _, e := range tracecheck.Named(evs, "thread_name") {
		named[e.Tid] = e.Args["name"].(string)
	}
	for tid := range tracks {
		assert.Contains(t, []string{"GET /users", "POST /orders"}, trimLane(named[tid]), "lane %d", tid)
	}
	assert.Len(t, tracecheck.SlicesNamed(tracks, "decode"), 200)
}

// trimLane returns a lane's group: its name without " (N)".
func trimLane(name string) string {
	for i := len(name) - 1; i > 0; i-- {
		if name[i] == '(' && i > 1 && name[i-1] == ' ' {
			return name[:i-1]
		}
	}
	return name
}
