package tracer

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	crashChildEnv = "TRACER_CRASH_CHILD"
	crashWorkers  = 8
)

// crashPace is how many jobs a crash child's worker records between short
// sleeps. The race detector makes encoding and the test's reading of the
// file ten times slower: a child that records as fast leaves a file that
// takes minutes to check.
var crashPace = map[bool]int{false: 50, true: 2}[raceEnabled]

// TestCrashChild is the process TestCrashSIGKILL kills. Its workers record
// numbered spans; after each flush it prints the drop count, whether every
// worker's lifetime span was older than the flush interval when the flush
// began (so the flush wrote them as B events), and, for each worker, the
// last span that had ended before the flush began.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("helper process for TestCrashSIGKILL")
	}
	// A small buffer limit: under the race detector, eight workers
	// recording flat out outrun the (ten times slower) encoder, recording
	// waits for room in the buffers, and every Flush drains the whole
	// limit. With the default 32 MiB that is seconds per Flush; the test is
	// about what a kill leaves, not about throughput.
	tr, err := New(path, WithFlushInterval(20*time.Millisecond), WithBufferLimit(2<<20))
	require.NoError(t, err)
	var ended, started [crashWorkers]atomic.Int64
	for w := range crashWorkers {
		ended[w].Store(-1)
		go func() {
			tr.SetGoroutineName(fmt.Sprintf("worker %d", w))
			defer tr.Span("worker lifetime")() // never ends: must show as B
			started[w].Store(nanotime())
			for seq := 0; ; seq++ {
				outer := tr.Span("job", Int("w", w), Int("seq", seq))
				tr.Span("step")()
				tr.Instant("mark")
				outer()
				ended[w].Store(int64(seq))
				if seq%crashPace == 0 {
					time.Sleep(200 * time.Microsecond)
				}
			}
		}()
	}
	for {
		old := 1
		var snap []string
		for w := range crashWorkers {
			if s := started[w].Load(); s == 0 || nanotime()-s <= int64(20*time.Millisecond) {
				old = 0
			}
			snap = append(snap, strconv.FormatInt(ended[w].Load(), 10))
		}
		require.NoError(t, tr.Flush())
		fmt.Printf("FLUSHED %d %d %s\n", tr.Stats().Dropped, old, strings.Join(snap, " "))
		time.Sleep(3 * time.Millisecond)
	}
}

// TestCrashSIGKILL kills a recording child process at a random moment and
// checks the file it left: it parses after the documented repair and holds
// every span that had ended before the last flush the child completed.
func TestCrashSIGKILL(t *testing.T) {
	t.Parallel() // its own tracers, child processes or importers: it mostly waits
	for run := 0; run < 3; run++ {
		crashOnce(t, time.Duration(run)*7*time.Millisecond)
	}
}

func crashOnce(t *testing.T, extra time.Duration) {
	path := filepath.Join(t.TempDir(), "crash.json")
	cmd := childtest.Command("TestCrashChild", crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	var last []int64
	var dropped uint64
	lines := bufio.NewScanner(out)
	// At least ten flushes, the last of which wrote the lifetime spans:
	// on a loaded machine the workers may start late.
	for flushes, old := 0, false; (flushes < 10 || !old) && lines.Scan(); {
		f := strings.Fields(lines.Text())
		if len(f) != crashWorkers+3 || f[0] != "FLUSHED" {
			continue
		}
		flushes++
		dropped, _ = strconv.ParseUint(f[1], 10, 64)
		old = f[2] == "1"
		last = last[:0]
		for _, s := range f[3:] {
			n, _ := strconv.ParseInt(s, 10, 64)
			last = append(last, n)
		}
	}
	require.Len(t, last, crashWorkers, "child never flushed")
	time.Sleep(extra)
	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	_ = cmd.Wait()

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	evs := readCrashed(t, data)
	checkTracks(t, evs)
	require.Zero(t, dropped, "the child records slowly enough not to drop")

	seen := map[[2]int64]int{}
	lifetimes := 0
	for _, e := range evs {
		switch {
		case e.Name == "job" && (e.Ph == "X" || e.Ph == "B"):
			seen[[2]int64{int64(e.Args["w"].(float64)), int64(e.Args["seq"].(float64))}]++
		case e.Name == "worker lifetime" && e.Ph == "B":
			lifetimes++
		}
	}
	for w, upTo := range last {
		for seq := int64(0); seq <= upTo; seq++ {
			require.Equal(t, 1, seen[[2]int64{int64(w), seq}], "worker %d job %d (last flushed %d) must be in the file once", w, seq, upTo)
		}
	}
	assert.Equal(t, crashWorkers, lifetimes, "the spans open since start must show as B events")
	names := 0
	for _, e := range byPhase(evs, "M") {
		if e.Name == "thread_name" {
			names++
		}
	}
	assert.Equal(t, crashWorkers, names)
}
