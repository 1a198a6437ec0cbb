package tracer

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/atomic"
)

// TestErrorTallyIsBounded checks that a fault that lasts keeps constant
// memory: a disk full for a hundred thousand writes gives one line, with
// the count, and errors.Is still finds the cause.
func TestErrorTallyIsBounded(t *testing.T) {
	var e errorTally
	full := &fs.PathError{Op: "write", Path: "t.json", Err: syscall.ENOSPC}
	for range 100_000 {
		e.add(full)
	}
	for i := range 10 {
		e.add(fmt.Errorf("other error %d", i))
	}
	assert.Len(t, e.kinds, maxErrorKinds)
	err := e.take()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	assert.Len(t, lines, maxErrorKinds+1)
	assert.Equal(t, "write t.json: no space left on device (100000 failed writes)", lines[0])
	assert.Equal(t, "other error 0", lines[1])
	assert.Equal(t, "tracer: 7 more write errors of other kinds", lines[maxErrorKinds])
	assert.True(t, errors.Is(err, syscall.ENOSPC))
	assert.NoError(t, e.take(), "take starts again")
}

// failingWriter fails every write after the first (the header).
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n++; w.n == 1 {
		return len(p), nil
	}
	return 0, errors.New("write failed")
}

// TestReentrantCallsReturnAtOnce calls Flush, Close and Stop from the
// error handler, which runs on the writer goroutine: each returns
// ErrReentrant instead of waiting for itself, the tracer stays open, and
// the default tracer stays the default.
func TestReentrantCallsReturnAtOnce(t *testing.T) {
	got := make(chan []error, 1)
	var tr *Tracer
	var armed atomic.Bool // SetDefault may write (names set earlier) and fail first
	handler := func(error) {
		if !armed.Load() {
			return
		}
		select {
		case got <- []error{tr.Flush(), Flush(), tr.Close(), Stop()}:
		default:
		}
	}
	tr, err := NewWithWriter(&failingWriter{}, WithErrorHandler(handler), WithStopTimeout(0))
	require.NoError(t, err)
	require.NoError(t, SetDefault(tr))
	defer Stop()
	armed.Store(true)
	tr.Instant("x")
	tr.Flush() // the write fails: the handler runs
	errs := <-got
	for i, err := range errs {
		assert.ErrorIs(t, err, ErrReentrant, "call %d", i)
	}
	assert.Same(t, tr, Default(), "Stop from the handler left the default tracer alone")
	assert.True(t, tr.Enabled(), "Close from the handler did not close it")
}
