package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutSource records a trace with spans that cross any window: a long
// outer span (B/E: it outlives flushes), nested steps, a counter, an async
// operation and flows, on named goroutines.
func cutSource(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "src.json")
	tr, err := tracer.New(path, tracer.WithFlushInterval(5*time.Millisecond))
	require.NoError(t, err)
	tr.SetGoroutineName("main")
	outer := tr.LongSpan("outer")
	op := tr.AsyncBegin("download", tracer.Category("net"))
	for i := range 40 {
		func() {
			defer tr.Span("step", tracer.Int("i", i))()
			tr.Counter("queue", tracer.Int("depth", i))
			f := tr.FlowBegin("hand-off")
			func() {
				defer tr.Span("inner")()
				time.Sleep(time.Millisecond)
			}()
			f.End()
		}()
	}
	op.End()
	outer()
	require.NoError(t, tr.Close())
	return path
}

// TestCut cuts a window out of a trace: every slice lies in it, those that
// crossed its edges are clipped to them and still nest, the tracks keep
// their names, each counter has its value at the window's start, and both
// viewers load the cut.
func TestCut(t *testing.T) {
	t.Parallel()
	src := cutSource(t)
	evs := tracecheck.Read(t, src)
	var first, last float64 = 1e18, 0
	for _, s := range tracecheck.SlicesNamed(tracecheck.Tracks(t, evs), "step") {
		first, last = min(first, s.Start), max(last, s.End)
	}
	from := time.Duration((first + (last-first)/3) * 1000)
	to := time.Duration((first + 2*(last-first)/3) * 1000)
	out := filepath.Join(t.TempDir(), "cut.json")
	code, _, stderr := runCmd("cut", "-from", from.String(), "-to", to.String(), "-o", out, src)
	require.Equal(t, 0, code, stderr)

	cut := tracecheck.Read(t, out)
	tracks := tracecheck.Tracks(t, cut)
	lo, hi := float64(from)/1000, float64(to)/1000
	const eps = 0.0015
	steps := tracecheck.SlicesNamed(tracks, "step")
	assert.NotEmpty(t, steps)
	assert.Less(t, len(steps), 40, "only the window's")
	for _, ss := range tracks {
		for _, s := range ss {
			assert.GreaterOrEqual(t, s.Start, lo-eps, "%s starts in the window", s.Name)
			assert.LessOrEqual(t, s.End, hi+eps, "%s ends in the window", s.Name)
		}
	}
	outer := tracecheck.SlicesNamed(tracks, "outer")
	require.Len(t, outer, 1, "the span around the window, clipped to it")
	assert.InDelta(t, lo, outer[0].Start, eps)
	assert.InDelta(t, hi, outer[0].End, eps)
	assert.NotEmpty(t, tracecheck.Named(cut, "thread_name"), "tracks keep their names")
	assert.NotEmpty(t, tracecheck.Named(cut, "process_name"))
	var atStart bool
	for _, e := range tracecheck.Phase(cut, "C") {
		if e.Name == "queue" && e.Ts >= lo-eps && e.Ts <= lo+eps {
			atStart = true
		}
	}
	assert.True(t, atStart, "the counter's value at the window's start")
	ops := tracecheck.Async(t, cut)
	require.Len(t, ops, 1, "the async operation across the window, clipped")
	if heavyRun() {
		tracecheck.Import(t, out)
	}
}

// TestCutFilters keeps one goroutine, or one name, and refuses a window
// that ends before it starts.
func TestCutFilters(t *testing.T) {
	t.Parallel()
	src := cutSource(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "inner.json")
	code, _, stderr := runCmd("cut", "-name", "inner", "-o", out, src)
	require.Equal(t, 0, code, stderr)
	tracks := tracecheck.Tracks(t, tracecheck.Read(t, out))
	assert.Len(t, tracecheck.SlicesNamed(tracks, "inner"), 40)
	assert.Empty(t, tracecheck.SlicesNamed(tracks, "step"))

	code, _, _ = runCmd("cut", "-from", "2s", "-to", "1s", "-o", filepath.Join(dir, "x.json"), src)
	assert.Equal(t, 2, code)
}
