//go:build unix

package tracer

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFIFOWithoutReader is issue 10 item 14: New on a named pipe that no
// process reads blocked for ever; it now gives up after the stop timeout
// with an error that says why.
func TestFIFOWithoutReader(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trace.fifo")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	start := time.Now()
	const timeout = 200 * time.Millisecond
	_, err := New(path, WithStopTimeout(timeout))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no process opened for reading within 200ms")
	assert.Less(t, time.Since(start), timeout+giveUpSlack)
}

// TestFIFOWithReader: a reader that comes within the stop timeout gets the
// whole trace.
func TestFIFOWithReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.fifo")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	got := make(chan []byte, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		f, err := os.Open(path)
		if err != nil {
			got <- nil
			return
		}
		defer f.Close()
		data, _ := io.ReadAll(f)
		got <- data
	}()
	tr, err := New(path)
	require.NoError(t, err)
	for i := range 1000 {
		tr.Span("job", Int("i", i))()
	}
	require.NoError(t, tr.Close())
	data := <-got
	evs := parseStream(t, data)
	assert.Len(t, byName(evs, "job"), 1000)
}
