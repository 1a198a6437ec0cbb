package traceslog_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/race"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/traceslog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// capture is a handler that keeps what it is given, to check that records
// pass through unchanged.
type capture struct {
	mu      sync.Mutex
	level   slog.Level
	records []slog.Record
	attrs   []slog.Attr
	groups  []string
}

func (c *capture) Enabled(_ context.Context, l slog.Level) bool { return l >= c.level }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, r)
	return nil
}
func (c *capture) WithAttrs(as []slog.Attr) slog.Handler {
	c.mu.Lock() // loggers derive handlers from several goroutines at once
	defer c.mu.Unlock()
	c.attrs = append(c.attrs, as...)
	return c
}
func (c *capture) WithGroup(name string) slog.Handler {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.groups = append(c.groups, name)
	return c
}

// TestHandlerRecordsInstants logs from two goroutines inside spans and
// checks the trace: one instant per enabled record, on the goroutine that
// logged it and inside its span, with the level as category, attributes
// as args and groups flattened; and the wrapped handler got every record
// as it was.
func TestHandlerRecordsInstants(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slog.json")
	tr, err := tracer.New(path)
	require.NoError(t, err)
	next := &capture{level: slog.LevelInfo}
	logger := slog.New(traceslog.NewHandler(next, &traceslog.HandlerOptions{Tracer: tr}))

	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			defer tr.Span("work", tracer.Int("w", w))()
			logger.Debug("hidden", "w", w) // disabled: in neither
			logger.Info("started", "w", w, "name", "job", "ok", true, "ratio", 0.5, "big", uint64(1<<63))
			logger.With("req", 7).WithGroup("db").Warn("slow query",
				"table", "users", slog.Group("timing", "rows", 3, "took", 2*time.Millisecond))
			logger.Log(context.Background(), slog.LevelError+2, "custom level", slog.Group("", "inline", 1))
		})
	}
	wg.Wait()
	require.NoError(t, tr.Close())

	evs := tracecheck.Read(t, path)
	tracks := tracecheck.Tracks(t, evs)
	inst := tracecheck.Phase(evs, "i")
	require.Len(t, inst, 6)
	assert.Empty(t, tracecheck.Named(evs, "hidden"))
	for _, e := range inst {
		assert.Equal(t, "t", e.S)
		span, ok := tracecheck.Enclosing(tracks, e.Tid, e.Ts)
		require.True(t, ok, "instant %q outside every span of its goroutine", e.Name)
		assert.Equal(t, "work", span.Name)
		if e.Name == "started" {
			assert.Equal(t, span.Args["w"], e.Args["w"], "on the track of the goroutine that logged it")
		}
	}
	tests := []struct {
		name, cat string
		args      map[string]any
	}{
		{"started", "INFO", map[string]any{"name": "job", "ok": true, "ratio": 0.5, "big": float64(1 << 63)}},
		{"slow query", "WARN", map[string]any{"req": 7.0, "db.table": "users", "db.timing.rows": 3.0, "db.timing.took": "2ms"}},
		{"custom level", "ERROR+2", map[string]any{"inline": 1.0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tracecheck.Named(evs, tc.name)
			require.Len(t, got, 2)
			assert.Equal(t, tc.cat, got[0].Cat)
			for k, v := range tc.args {
				assert.Equal(t, v, got[0].Args[k], "arg %q", k)
			}
		})
	}

	require.Len(t, next.records, 6, "the wrapped handler gets every enabled record")
	assert.Equal(t, []string{"db"}, next.groups[:1])
	for _, r := range next.records {
		if r.Message == "started" {
			assert.Equal(t, 5, r.NumAttrs(), "records pass through unchanged")
		}
	}

	tracecheck.ImportQuick(t, path)
}

// nop is a handler that is enabled from Info and does nothing, so that
// benchmarks and allocation counts measure the wrapper alone.
type nop struct{}

func (nop) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (nop) Handle(context.Context, slog.Record) error    { return nil }
func (h nop) WithAttrs([]slog.Attr) slog.Handler         { return h }
func (h nop) WithGroup(string) slog.Handler              { return h }

// TestHandlerAllocations checks the promises on cost: a disabled level and
// tracing off allocate nothing more than the wrapped handler alone, and
// string, number and bool attributes allocate nothing with tracing on.
func TestHandlerAllocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	base := slog.New(nop{})
	wrapped := slog.New(traceslog.NewHandler(nop{}, nil))
	ctx := context.Background()
	logAt := func(l *slog.Logger, level slog.Level) func() {
		return func() { l.LogAttrs(ctx, level, "msg", slog.String("k", "v"), slog.Int("n", 1)) }
	}
	require.Nil(t, tracer.Default())
	assert.Zero(t, testing.AllocsPerRun(100, logAt(wrapped, slog.LevelDebug)), "disabled level")
	assert.Equal(t, testing.AllocsPerRun(100, logAt(base, slog.LevelInfo)),
		testing.AllocsPerRun(100, logAt(wrapped, slog.LevelInfo)), "tracing off")

	var buf bytes.Buffer
	tr, err := tracer.NewWithWriter(&buf)
	require.NoError(t, err)
	on := slog.New(traceslog.NewHandler(nop{}, &traceslog.HandlerOptions{Tracer: tr}))
	assert.Equal(t, testing.AllocsPerRun(100, logAt(base, slog.LevelInfo)),
		testing.AllocsPerRun(100, logAt(on, slog.LevelInfo)), "tracing on")
	require.NoError(t, tr.Close())
}

// BenchmarkHandler times one Info record with two attributes through the
// wrapper, against the wrapped handler alone. The overhead benchmarks of
// every integration are in the benchmarks module.
func BenchmarkHandler(b *testing.B) {
	ctx := context.Background()
	tr, err := tracer.NewWithWriter(io.Discard)
	require.NoError(b, err)
	defer tr.Close()
	for _, bc := range []struct {
		name string
		h    slog.Handler
	}{
		{"alone", nop{}},
		{"off", traceslog.NewHandler(nop{}, nil)},
		{"on", traceslog.NewHandler(nop{}, &traceslog.HandlerOptions{Tracer: tr})},
	} {
		l := slog.New(bc.h)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				l.LogAttrs(ctx, slog.LevelInfo, "msg", slog.String("k", "v"), slog.Int("n", i))
				if i%8192 == 0 { // keep the ring from filling: time the recording, not drops
					b.StopTimer()
					tr.Flush()
					b.StartTimer()
				}
			}
		})
	}
}
