package tracer

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
		clk := newTestClock()
		tr, path := newTestTracer(t, withClock(clk))
		tr.Instant("lonely") // then this goroutine, and its P, go quiet
		clk.pass()           // a flush interval later
		require.True(t, eventually(t, path, `"lonely"`, 10*time.Second),
			"an event on an idle P is written at the next interval's pass")
	})

	t.Run("sealed chunks", func(t *testing.T) {
		tr, path := newTestTracer(t)
		// Enough to seal wakeChunks chunks however the goroutine moves
		// between Ps meanwhile: each P's chain may hold a chunk it did not
		// fill (under -race and load, 2*chunkSlots+10 sealed only one).
		for i := 0; i < (wakeChunks+runtime.GOMAXPROCS(0))*chunkSlots; i++ {
			tr.Instant("burst")
		}
		require.True(t, eventually(t, path, `"burst"`, 5*time.Second),
			"sealed chunks are encoded and written long before the 10s interval")
		require.Zero(t, tr.Stats().Dropped)
	})
}

// TestRunsOfSpans records runs of spans back to back, which the flusher
// encodes in one loop (takeRun), broken in each way the loop must stop
// at: another goroutine's spans on the same P, a span whose end does not
// follow it (an outer span), an event of another kind, a batch that fills
// (rotated files of 16 KiB have batches of 16 KiB, and the runs here
// reach 40 KiB) and a Flush. Every span must be in the files once, as an
// X event with its own args and those given to its end, in its
// goroutine's order, and no file may pass its limit by more than one
// write.
func TestRunsOfSpans(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one chain for both goroutines
	const goroutines, spans, maxSize = 2, 6000, 16 << 10
	dir := t.TempDir()
	tr, err := New(filepath.Join(dir, "trace.json"), WithMaxFileSize(maxSize), withClock(newTestClock()))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range spans {
				switch {
				case i%997 == 0:
					runtime.Gosched() // the other goroutine's run follows on the chain
				case i%499 == 0:
					tr.Instant("between")
				case i%613 == 0 && g == 0:
					assert.NoError(t, tr.Flush())
				}
				if i%701 == 0 {
					outer := tr.Span("outer", Int("g", g), Int("i", i))
					tr.Span("span", Int("g", g), Int("i", i))()
					outer()
					continue
				}
				end := tr.Span("span", Int("g", g), Int("i", i), String("pad", strings.Repeat("x", i%40)))
				if i%3 == 0 {
					end(Int("end", i))
				} else {
					end()
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, tr.Close())
	require.Zero(t, tr.Stats().Dropped)

	files := traceFiles(t, dir)
	require.Greater(t, len(files), 10, "the trace must rotate often")
	next := make([]int, goroutines) // the i each goroutine's next span must have
	outers := 0
	for k, file := range files {
		evs := readClosed(t, file)
		checkTracks(t, evs)
		if k < len(files)-1 {
			fi, err := os.Stat(file)
			require.NoError(t, err)
			assert.Less(t, fi.Size(), int64(2*maxSize+4<<10), "%s: a file passes its limit by at most one write", file)
		}
		for _, e := range evs {
			switch e.Name {
			case "outer":
				outers++
			case "span":
				require.Equal(t, "X", e.Ph)
				g, i := int(e.Args["g"].(float64)), int(e.Args["i"].(float64))
				require.Equal(t, next[g], i, "goroutine %d's spans in order, each once", g)
				next[g]++
				assert.GreaterOrEqual(t, e.Dur, 0.0)
				if i%3 == 0 && i%701 != 0 {
					assert.EqualValues(t, i, e.Args["end"], "the end's args join the span's")
				} else {
					assert.NotContains(t, e.Args, "end")
				}
				if i%701 != 0 {
					assert.Len(t, e.Args["pad"], i%40)
				}
			}
		}
	}
	assert.Equal(t, []int{spans, spans}, next, "every span in the files")
	assert.Equal(t, goroutines*((spans+700)/701), outers)
}
