package tracer

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeCounter is a writer that counts how often it is closed.
type closeCounter struct {
	bytes.Buffer
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func TestNewWithWriter(t *testing.T) {
	var w closeCounter
	tr, err := NewWithWriter(&w, WithProcessName("to a writer"))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(w.Bytes(), []byte("[\n{\"name\":\"process_name\"")), "the head is written at once")
	tr.SetGoroutineName("main")
	tr.Span("work", Int("n", 1))()
	require.NoError(t, tr.Close())
	assert.Zero(t, w.closed, "NewWithWriter never closes its writer")

	var evs []event
	dec := json.NewDecoder(&w)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&evs))
	assert.Equal(t, "to a writer", find(t, evs, "M", "process_name").Args["name"])
	find(t, evs, "X", "work")
}

func TestNewWithSink(t *testing.T) {
	var s closeCounter
	tr, err := NewWithSink(&s)
	require.NoError(t, err)
	tr.Instant("tick")
	require.NoError(t, tr.Close())
	require.NoError(t, tr.Close())
	assert.Equal(t, 1, s.closed, "the Sink is closed once, by Close")
	var evs []event
	require.NoError(t, json.Unmarshal(s.Bytes(), &evs))
	find(t, evs, "i", "tick")
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestNewWithWriterHeadFails(t *testing.T) {
	_, err := NewWithWriter(failWriter{})
	assert.ErrorContains(t, err, "broken pipe")
	_, err = NewWithWriter(failWriter{}, WithGzip(1))
	assert.ErrorContains(t, err, "broken pipe")
}
