package tracer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSinkChain checks that each way to open a trace builds the chain the
// docs describe, and that what a link needs to know of the next reaches
// it through traits: gzip keeps members within pages on a file and writes
// pieces to a pipe; only a rotated trace cuts files; only a flight
// recorder keeps a window.
func TestSinkChain(t *testing.T) {
	dir := t.TempDir()
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	defer pw.Close()

	tests := []struct {
		name      string
		open      func() (sink, error)
		files     bool
		aligned   bool // a gzip link that keeps members within a page
		pipe      bool // a gzip link that writes to a pipe
		gzipFirst bool
	}{
		{name: "plain file", open: func() (sink, error) {
			return openSink(filepath.Join(dir, "a.json"), &sinkOptions{})
		}},
		{name: "gzip file", gzipFirst: true, aligned: true, open: func() (sink, error) {
			return openSink(filepath.Join(dir, "b.json.gz"), &sinkOptions{})
		}},
		{name: "rotated", files: true, open: func() (sink, error) {
			return openSink(filepath.Join(dir, "c.json"), &sinkOptions{maxSize: minFileSize})
		}},
		{name: "gzip pipe", gzipFirst: true, pipe: true, open: func() (sink, error) {
			ws := newWriterSink(pw, nil)
			ws.whole = true
			return newGzipSink(ws, 1), nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.open()
			require.NoError(t, err)
			defer s.Close()
			tr := s.traits()
			assert.Equal(t, tt.files, tr.files != nil)
			assert.False(t, tr.window)
			g, isGzip := s.(*gzipSink)
			require.Equal(t, tt.gzipFirst, isGzip)
			if isGzip {
				assert.Equal(t, tt.aligned, g.aligned)
				assert.Equal(t, tt.pipe, g.pipe)
			}
		})
	}

	rec, err := NewFlightRecorder(FlightRecorderConfig{MaxEvents: 10})
	require.NoError(t, err)
	defer rec.Close()
	tr := rec.flusher.traits
	assert.True(t, tr.window)
	assert.Nil(t, tr.files)
	assert.NotNil(t, tr.overwritten)
}
