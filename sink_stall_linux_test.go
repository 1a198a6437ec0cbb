//go:build linux

package tracer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStopOnStalledFileIsBounded stalls a real file: the default tracer
// writes into a named pipe nobody reads. Stop must come back after the
// stop timeout; once the pipe is read, the rest of the trace arrives and
// it is strict JSON.
func TestStopOnStalledFileIsBounded(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "trace.fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	defer r.Close()

	const timeout = 200 * time.Millisecond
	require.NoError(t, Start(fifo, WithStopTimeout(timeout)))
	tr := Default()
	for i := range 5000 { // far more than a pipe holds
		Span("work", Int("id", i), String("pad", "a hundred bytes of padding, more or less, so the pipe fills up quickly......"))()
	}
	start := time.Now()
	err = Stop()
	took := time.Since(start)
	require.ErrorIs(t, err, ErrTimeout)
	assert.Less(t, took, timeout+giveUpSlack)
	assert.Nil(t, Default(), "Stop took the tracer down even so")

	data, err := io.ReadAll(r) // unblocks the writer: Close finishes and EOF follows
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "copy.json")
	require.NoError(t, os.WriteFile(out, data, 0o644))
	evs := readClosed(t, out)
	ids := idsOf(evs, "work")
	assert.Equal(t, 5000, len(ids), "no event lost, though Stop returned early")
	assert.Zero(t, tr.Stats().Dropped)
}

const fullDiskEnv = "TRACER_FULL_DISK_CHILD"

// fullDiskLimit is the file size at which the child's disk is full. It is
// not a multiple of the page size, so writes stop in the middle of an
// event, as they can on file systems that fill up a block at a time.
const fullDiskLimit = 200_000 + 1234

// TestFullDiskChild is the process TestFullDisk runs. A file size limit
// (RLIMIT_FSIZE) makes its writes fail part-way, as a full disk does; it
// records until several writes failed, lifts the limit, as when space is
// freed, records more and closes the tracer.
func TestFullDiskChild(t *testing.T) {
	path := os.Getenv(fullDiskEnv)
	if path == "" {
		t.Skip("helper process for TestFullDisk")
	}
	signal.Ignore(syscall.SIGXFSZ) // fail the write with EFBIG instead of dying
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim))
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: fullDiskLimit, Max: lim.Max}))

	tr, err := New(path, withClock(newTestClock()))
	require.NoError(t, err)
	id := 0
	record := func() {
		for range 300 {
			tr.Span("ev", Int("id", id), String("pad", "some padding to fill the disk quickly"))()
			id++
		}
	}
	for tr.Stats().SinkErrors < 3 {
		record()
		tr.Flush()
	}
	full := id
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim))
	record()
	require.NoError(t, tr.Close())
	st := tr.Stats()
	fmt.Printf("RESULT %d %d %d %d\n", full, id, st.Lost, st.Dropped)
}

// TestFullDisk checks the file a full disk leaves: strict JSON once space
// is back and the tracer closed, no event twice, every event recorded after
// the recovery present, and the events lost in the failed writes counted.
func TestFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "full.json")
	cmd := childtest.Command("TestFullDiskChild", fullDiskEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "child: %s\n%s", out, stderr.String())
	var full, total int
	var lost, dropped uint64
	_, err = fmt.Sscanf(string(out[bytes.Index(out, []byte("RESULT")):]), "RESULT %d %d %d %d", &full, &total, &lost, &dropped)
	require.NoError(t, err, "child output: %s", out)
	require.Zero(t, dropped)
	require.Equal(t, 1, strings.Count(stderr.String(), "file too large"),
		"the default error handler reports the error once: %s", stderr.String())

	evs := readClosed(t, path)
	ids := idsOf(evs, "ev")
	missing := 0
	for i := range total {
		n := ids[i]
		require.LessOrEqual(t, n, 1, "event %d written twice", i)
		if i >= full {
			require.Equal(t, 1, n, "event %d was recorded after space came back", i)
		}
		missing += 1 - n
	}
	require.Positive(t, missing)
	assert.LessOrEqual(t, uint64(missing), lost, "every missing event is counted as lost")
	counter := dropCounter(evs)
	assert.Equal(t, lost, counter[len(counter)-1], "the drop counter shows the lost events")
	t.Logf("%d events, %d missing, %d counted lost (a failed write's events that reached the disk before it failed are counted too)", total, missing, lost)
}
