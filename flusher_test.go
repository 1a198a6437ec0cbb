package tracer

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// eventually polls the trace file, without flushing, until it contains
// want or the deadline passes.
func eventually(t *testing.T, path, want string, within time.Duration) bool {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		if strings.Contains(string(data), want) {
			return true
		}
	}
	return false
}

// TestFlusherDrainsOnItsOwn checks the two triggers of the background
// flusher with nobody calling Flush: the interval, for an event left on a
// P that then went idle, and the high-water mark, long before the interval.
func TestFlusherDrainsOnItsOwn(t *testing.T) {
	require.LessOrEqual(t, DefaultFlushInterval, 200*time.Millisecond, "issue 2: the default interval is at most 200ms")

	t.Run("interval", func(t *testing.T) {
		tr, path := newTestTracer(t) // the default interval
		tr.Instant("lonely")         // then this goroutine, and its P, go quiet
		require.True(t, eventually(t, path, `"lonely"`, 20*DefaultFlushInterval),
			"an event on an idle P is written within a few flush intervals")
	})

	t.Run("sealed chunks", func(t *testing.T) {
		tr, path := newTestTracer(t, WithFlushInterval(10*time.Second))
		for i := 0; i < wakeChunks*chunkSlots+10; i++ { // fills and seals wakeChunks chunks
			tr.Instant("burst")
		}
		require.True(t, eventually(t, path, `"burst"`, 5*time.Second),
			"sealed chunks are encoded and written long before the 10s interval")
		require.Zero(t, tr.Stats().Dropped)
	})
}
