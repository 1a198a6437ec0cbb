package tracer

import (
	"bytes"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/gotracer/tracer/internal/jsonenc"

	"github.com/gotracer/tracer/internal/imported"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSource holds events to drain and records what the flusher told it.
type fakeSource struct {
	mu      sync.Mutex
	lines   [][]byte
	named   map[uint64]string
	sorted  map[uint64]int64
	spanned []uint64
	drains  int
}

func (s *fakeSource) Drain(b []byte, limit int) ([]byte, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drains++
	n := 0
	for len(s.lines) > 0 && (n == 0 || len(s.lines[0]) <= limit) {
		limit -= len(s.lines[0])
		b = append(b, s.lines[0]...)
		s.lines = s.lines[1:]
		n++
	}
	return b, n, len(s.lines) > 0
}

func (s *fakeSource) Named(gid uint64, name string, hasName bool, sort int64, hasSort bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if hasName {
		s.named[gid] = name
	}
	if hasSort {
		s.sorted[gid] = sort
	}
}

func (s *fakeSource) Spanned(gid uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spanned = append(s.spanned, gid)
}

func newFakeSource() *fakeSource {
	return &fakeSource{named: map[uint64]string{}, sorted: map[uint64]int64{}}
}

// add queues n X events on track tid, each with a padding arg of pad bytes.
func (s *fakeSource) add(pid, n int, tid uint64, pad int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range n {
		b := []byte(`{"name":"imported","ph":"X","ts":`)
		b = jsonenc.Micros(b, int64(i)*1000)
		b = append(b, `,"dur":0.500,"pid":`...)
		b = strconv.AppendInt(b, int64(pid), 10)
		b = append(b, `,"tid":`...)
		b = strconv.AppendUint(b, tid, 10)
		b = append(b, `,"args":{"pad":`...)
		b = jsonenc.String(b, string(bytes.Repeat([]byte{'x'}, pad)))
		s.lines = append(s.lines, append(b, "}},\n"...))
	}
}

func TestImportedEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events int
		pad    int
	}{
		{name: "one batch", events: 10, pad: 10},
		{name: "many batches", events: 400, pad: 2000}, // 800 KB: more than one 256 KiB batch
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.json")
			tr, err := New(path)
			require.NoError(t, err)
			src := newFakeSource()
			pid, base, err := imported.Attach(tr, src)
			require.NoError(t, err)
			assert.Equal(t, processID, pid)
			assert.Equal(t, tr.base, base)

			src.add(pid, tc.events, 1<<31|7, tc.pad)
			tr.SetGoroutineName("named")
			tr.SetGoroutineSortIndex(3)
			tr.Span("a")()
			tr.Span("b")()
			require.NoError(t, tr.Flush())

			src.mu.Lock()
			assert.Empty(t, src.lines, "all drained by one Flush")
			gid := goroutineID()
			assert.Equal(t, "named", src.named[gid])
			assert.Equal(t, int64(3), src.sorted[gid])
			assert.Equal(t, []uint64{gid}, src.spanned, "told once per run of one goroutine's spans")
			src.mu.Unlock()

			imported.Detach(tr, src)
			// A pass under way may still drain (see Detach): the next
			// one, which Flush waits for, does not.
			require.NoError(t, tr.Flush())
			src.add(pid, 5, 1<<31|8, 0)
			require.NoError(t, tr.Close())
			assert.Len(t, src.lines, 5, "a detached source is not drained")

			evs := tracecheck.Read(t, path)
			assert.Len(t, tracecheck.Named(evs, "imported"), tc.events)
			assert.Equal(t, float64(base), evs[0].Args["ts0_mono_ns"], "the header says where ts 0 is on the monotonic clock")
			// The process metadata (the header, and perhaps the same
			// again to end the file) is not counted.
			assert.Equal(t, uint64(len(evs)-len(tracecheck.Named(evs, "process_name"))), tr.Stats().Events, "imported events are counted as written")
		})
	}
}

func TestImportedAttachRefused(t *testing.T) {
	rec, err := NewFlightRecorder(FlightRecorderConfig{MaxEvents: 100})
	require.NoError(t, err)
	defer rec.Tracer().Close()
	_, _, err = imported.Attach(rec.Tracer(), newFakeSource())
	assert.Error(t, err, "a flight recorder")

	tr, err := New(filepath.Join(t.TempDir(), "t.json"))
	require.NoError(t, err)
	require.NoError(t, tr.Close())
	_, _, err = imported.Attach(tr, newFakeSource())
	assert.ErrorIs(t, err, ErrClosed)

	_, _, err = imported.Attach((*Tracer)(nil), newFakeSource())
	assert.Error(t, err)
	_, _, err = imported.Attach("not a tracer", newFakeSource())
	assert.Error(t, err)
}
