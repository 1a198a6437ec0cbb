package tracer

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// takeTrace takes a flight recording and parses it as strict JSON.
func takeTrace(t testing.TB, r *FlightRecorder) []event {
	t.Helper()
	var buf bytes.Buffer
	n, err := r.WriteTo(&buf)
	require.NoError(t, err)
	require.EqualValues(t, buf.Len(), n)
	// The object form, as Close leaves a plain file: chrome://tracing
	// reads its times to the nanosecond.
	require.True(t, bytes.HasPrefix(buf.Bytes(), []byte(objectHead+"[\n{\"name\":\"process_name\"")), "%.60q", buf.Bytes())
	var obj struct {
		DisplayTimeUnit string  `json:"displayTimeUnit"`
		TraceEvents     []event `json:"traceEvents"`
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&obj), "a flight recording is strict JSON")
	require.Equal(t, "ns", obj.DisplayTimeUnit)
	return obj.TraceEvents
}

func newFlightRecorder(t *testing.T, cfg FlightRecorderConfig, opts ...Option) *FlightRecorder {
	t.Helper()
	r, err := NewFlightRecorder(cfg, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

func TestFlightRecorderKeepsTheNewestEvents(t *testing.T) {
	tests := []struct {
		name     string
		cfg      FlightRecorderConfig
		events   int
		flushAt  int // flush every flushAt events
		wantLast int // the window holds the last wantLast instants
	}{
		{"fewer than the window", FlightRecorderConfig{MaxEvents: 100}, 60, 1000, 60},
		{"one batch", FlightRecorderConfig{MaxEvents: 100}, 1000, 1000, 100},
		{"many batches", FlightRecorderConfig{MaxEvents: 100}, 1000, 30, 100},
		{"batches smaller than the window", FlightRecorderConfig{MaxEvents: 250}, 1000, 7, 250},
		// Each instant is 100-odd bytes: the byte limit cuts first.
		{"by bytes", FlightRecorderConfig{MaxEvents: 1000, MaxBytes: 50 * 120}, 1000, 64, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFlightRecorder(t, tt.cfg, withClock(newTestClock()))
			r.SetGoroutineName("recorder")
			for i := 0; i < tt.events; i++ {
				r.Instant("tick", Int("seq", i))
				if i%tt.flushAt == tt.flushAt-1 {
					require.NoError(t, r.Flush())
				}
			}
			evs := takeTrace(t, r)
			ticks := byPhase(evs, "i")
			if tt.wantLast < 0 {
				held := r.win.bytes
				assert.LessOrEqual(t, held, tt.cfg.MaxBytes)
				assert.Greater(t, held+100, tt.cfg.MaxBytes, "one more event would not fit")
				assert.Equal(t, strings.Count(string(r.win.chunks[0].buf[r.win.chunks[0].off:]), "\n"), r.win.chunks[0].events)
			} else {
				require.Len(t, ticks, tt.wantLast)
			}
			for i, e := range ticks {
				assert.EqualValues(t, tt.events-len(ticks)+i, e.Args["seq"], "the newest events, in order")
			}
			assert.Equal(t, "recorder", find(t, evs, "M", "thread_name").Args["name"], "the name outlives the window")
			st := r.Stats()
			assert.Zero(t, st.Dropped)
			assert.EqualValues(t, tt.events, st.Events, "the window took every event; the name is remembered apart")
			assert.EqualValues(t, st.Events-st.Overwritten, len(ticks), "what is not overwritten is in the trace")
			assert.Len(t, byName(evs, "thread_name"), 1, "the name once, from the memory of names")
			require.NoError(t, r.Close())
			assert.Equal(t, st.Events, r.Stats().Overwritten, "the window's events count as pushed out once it closes")
		})
	}
}

func TestFlightRecorderMaxAge(t *testing.T) {
	clk := newTestClock()
	r := newFlightRecorder(t, FlightRecorderConfig{MaxAge: 50 * time.Millisecond}, withClock(clk))
	r.Instant("old")
	require.NoError(t, r.Flush())
	clk.advance(100 * time.Millisecond)
	r.Instant("new")
	evs := takeTrace(t, r)
	find(t, evs, "i", "new")
	for _, e := range evs {
		assert.NotEqual(t, "old", e.Name, "events older than MaxAge are gone")
	}
	assert.GreaterOrEqual(t, r.Stats().Overwritten, uint64(1))
}

// TestFlightRecorderSpans checks that spans come out balanced whatever the
// window cut off: ended spans are X events, LongSpan's too, and spans still
// open are B events without E.
func TestFlightRecorderSpans(t *testing.T) {
	r := newFlightRecorder(t, FlightRecorderConfig{MaxEvents: 50}, withClock(newTestClock()))
	r.SetGoroutineName("main")
	request := r.Span("slow request", String("path", "/x"))
	region := r.LongSpan("region")
	for i := 0; i < 200; i++ {
		r.Span("step", Int("i", i))()
		if i%10 == 0 {
			require.NoError(t, r.Flush()) // the window takes a batch
		}
	}
	done := r.LongSpan("short begin")
	done()
	evs := takeTrace(t, r)
	checkTracks(t, evs)
	assert.Empty(t, byPhase(evs, "E"), "no E can lose its B to the window's edge")
	b := byPhase(evs, "B")
	require.Len(t, b, 2, "the open spans, outermost first")
	assert.Equal(t, "slow request", b[0].Name)
	assert.Equal(t, map[string]any{"path": "/x"}, b[0].Args)
	assert.Equal(t, "region", b[1].Name)
	find(t, evs, "X", "short begin")
	assert.LessOrEqual(t, len(byPhase(evs, "X")), 50)

	// Taking a trace does not empty the window; the spans that ended
	// since are X events now.
	region()
	request()
	evs = takeTrace(t, r)
	checkTracks(t, evs)
	assert.Empty(t, byPhase(evs, "B"))
	find(t, evs, "X", "slow request")
	find(t, evs, "X", "region")
}

// TestFlightRecorderShowsDrops: a flight recorder's window never stalls,
// so it drops nothing of a flood however small its buffers; drops (made
// here as a stalled file sink would) show in its dumps.
func TestFlightRecorderShowsDrops(t *testing.T) {
	t.Parallel()
	r := newFlightRecorder(t, FlightRecorderConfig{MaxEvents: 100_000}, WithBufferLimit(chunkBytes), withClock(newTestClock()))
	const n = 50_000
	for i := 0; i < n; i++ {
		r.Instant("flood")
	}
	require.Zero(t, r.Stats().Dropped, "a window never stalls")
	r.dropped.Add(37) // as a stalled sink would
	dropped := r.Stats().Dropped
	evs := takeTrace(t, r)
	last := evs[len(evs)-1]
	assert.Equal(t, "tracer.dropped", last.Name)
	assert.EqualValues(t, dropped, last.Args["events"])
	assert.EqualValues(t, n, len(byPhase(evs, "i")))
	assert.Zero(t, r.Stats().Overwritten, "drops are not overwrites")
}

func TestFlightRecorderWriteFile(t *testing.T) {
	tests := []struct {
		name string
		file string
		opts []Option
		gzip bool
	}{
		{"plain", "dump.json", nil, false},
		{"gzip by extension", "dump.json.gz", nil, true},
		{"gzip by option", "dump.json", []Option{WithGzip(9)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFlightRecorder(t, FlightRecorderConfig{MaxEvents: 100}, tt.opts...)
			r.Span("work")()
			path := filepath.Join(t.TempDir(), tt.file)
			require.NoError(t, r.WriteFile(path))
			var evs []event
			if tt.gzip {
				evs = readClosedGzip(t, path)
			} else {
				evs = readClosed(t, path)
			}
			find(t, evs, "X", "work")
		})
	}
}

func TestFlightRecorderErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg  FlightRecorderConfig
		opts []Option
		err  string
	}{
		{FlightRecorderConfig{}, nil, "needs MaxEvents or MaxAge"},
		{FlightRecorderConfig{MaxEvents: -1}, nil, "negative"},
		{FlightRecorderConfig{MaxAge: time.Second, MaxBytes: -1}, nil, "negative"},
		{FlightRecorderConfig{MaxEvents: 10}, []Option{WithMaxFileSize(1 << 20)}, "no files to rotate"},
		{FlightRecorderConfig{MaxEvents: 10}, []Option{WithGzip(12)}, "gzip level"},
	} {
		_, err := NewFlightRecorder(tt.cfg, tt.opts...)
		assert.ErrorContains(t, err, tt.err)
	}
	r, err := NewFlightRecorder(FlightRecorderConfig{MaxEvents: 10})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	_, err = r.WriteTo(&bytes.Buffer{})
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, r.WriteFile(filepath.Join(t.TempDir(), "x.json")), ErrClosed)
}

// TestFlightRecorderAsDefault takes a trace of what the package-level
// functions recorded.
func TestFlightRecorderAsDefault(t *testing.T) {
	r, err := NewFlightRecorder(FlightRecorderConfig{MaxEvents: 100})
	require.NoError(t, err)
	require.NoError(t, SetDefault(r.Tracer()))
	assert.ErrorIs(t, SetDefault(r.Tracer()), ErrStarted)
	func() { defer Span("handler")() }()
	path := filepath.Join(t.TempDir(), "dump.json")
	require.NoError(t, r.WriteFile(path))
	require.NoError(t, Stop())
	find(t, readClosed(t, path), "X", "handler")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(data), "}\n]\n}\n"))
}

// TestFlightRecorderNamesEachGoroutineOnce: a dump names every goroutine
// it remembers once, whether or not the event that set the name is still
// in the window (issue 10 item 16: it was written twice).
func TestFlightRecorderNamesEachGoroutineOnce(t *testing.T) {
	r := newFlightRecorder(t, FlightRecorderConfig{MaxEvents: 2000})
	r.SetGoroutineName("main")
	r.SetGoroutineSortIndex(1)
	for range 100 {
		r.Span("x")()
	}
	for range 2 { // a second dump after the first
		names := map[uint64]int{}
		sorts := map[uint64]int{}
		for _, e := range takeTrace(t, r) {
			switch e.Name {
			case "thread_name":
				names[e.Tid]++
			case "thread_sort_index":
				sorts[e.Tid]++
			}
		}
		require.Len(t, names, 1)
		for tid, n := range names {
			assert.Equal(t, 1, n, "goroutine %d named %d times", tid, n)
			assert.Equal(t, 1, sorts[tid])
		}
	}
}

// TestFlightRecorderWriteFileRefusesALiveFile is issue 31's seventh
// defect: a dump onto the file of a live tracer overwrote it, without its
// lock: the tracer's file ended with none of its spans and a broken head,
// and both calls returned nil. The dump is refused with ErrFileInUse, and
// the tracer's file keeps every span. On a file no tracer holds, a dump
// that cannot be written whole (a full disk) leaves it as it was.
func TestFlightRecorderWriteFileRefusesALiveFile(t *testing.T) {
	tr, path := newTestTracer(t)
	r := newFlightRecorder(t, FlightRecorderConfig{MaxEvents: 100})
	r.Span("dumped")()
	for i := range 1000 {
		tr.Span("live", Int("i", i))()
	}
	require.NoError(t, tr.Flush())
	err := r.WriteFile(path)
	require.ErrorIs(t, err, ErrFileInUse)
	assert.ErrorContains(t, err, path)
	for i := range 1000 {
		tr.Span("live", Int("i", 1000+i))()
	}
	require.NoError(t, tr.Close())
	assert.Len(t, byName(readClosed(t, path), "live"), 2000)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing left beside the file")

	// Once the tracer is closed, the file is free to replace.
	require.NoError(t, r.WriteFile(path))
	find(t, readClosed(t, path), "X", "dumped")
}

// TestFlightRecorderDumpHoldsTheTraceOnce: taking a trace allocates about
// the trace, once. A buffer grown as the trace filled it, after a copy of
// the window, held the window three times at once (torture seed
// 8728610704357819612: a 16 MiB window peaked 40 MiB above it at each
// dump). The spans held open make the part after the window large.
func TestFlightRecorderDumpHoldsTheTraceOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's allocations")
	}
	r := newFlightRecorder(t, FlightRecorderConfig{MaxEvents: 1 << 20, MaxBytes: 4 << 20}, withClock(newTestClock()))
	const held = 5000 // their B events: about 500 KiB after the window
	release := holdSpans(r.Span, held)
	for i := 0; i < 100000; i++ {
		r.Span("work", Int("i", i))()
		if i%10000 == 0 {
			require.NoError(t, r.Flush())
		}
	}
	require.NoError(t, r.Flush())

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n, err := r.WriteTo(io.Discard)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Greater(t, n, int64(4<<20), "the window and the held spans")
	allocated := int64(after.TotalAlloc - before.TotalAlloc)
	t.Logf("a trace of %d bytes allocated %d", n, allocated)
	assert.Less(t, allocated, n+n/2, "the trace, once, and what follows the window aside")
	release()
}

// TestFlightRecorderCloseCountsOpenSpans: a recorder closed with spans
// still open (spans never ended, which only a dump would write) counts
// them with its window's events in Overwritten: no trace can be taken of
// them any more, and none is lost without a count.
func TestFlightRecorderCloseCountsOpenSpans(t *testing.T) {
	r := newFlightRecorder(t, FlightRecorderConfig{MaxEvents: 1000}, withClock(newTestClock()))
	tr := r.Tracer()
	for i := range 3 {
		_ = tr.Span("never ended", Int("i", i))
	}
	tr.Span("ended")()
	require.NoError(t, tr.Flush())
	require.NoError(t, r.Close())
	assert.EqualValues(t, 4, r.Stats().Overwritten, "the window's one event and the three spans open")
}
