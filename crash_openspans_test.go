package tracer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const openChildEnv = "TRACER_OPEN_SPANS_CHILD"

// manyArgs returns n args, more than a record holds inline, so that the
// B event of a long span needs its continuation records too.
func manyArgs(prefix string, n int) []Arg {
	var args []Arg
	for i := range n {
		args = append(args, String(prefix+strconv.Itoa(i), "v"+strconv.Itoa(i)))
	}
	return args
}

// TestOpenSpansChild is killed in the middle of its work: a handler
// goroutine inside a request and a query, a worker three spans deep with
// many args on each, and a hundred short spans already done. It never
// calls Flush: the background flusher must write the long spans as B
// events on its own. It prints READY once they are in the file.
func TestOpenSpansChild(t *testing.T) {
	path := os.Getenv(openChildEnv)
	if path == "" {
		t.Skip("helper process for TestOpenSpansVisibleAfterKill")
	}
	tr, err := New(path, WithFlushInterval(10*time.Millisecond))
	require.NoError(t, err)
	go func() {
		tr.SetGoroutineName("worker")
		defer tr.Span("batch", manyArgs("b", 7)...)()
		defer tr.Span("item", manyArgs("i", 5)...)()
		defer tr.Span("decode", manyArgs("d", 9)...)()
		select {}
	}()
	tr.SetGoroutineName("handler")
	defer tr.Span("request", String("path", "/upload"), Int("bytes", 1<<20))()
	defer tr.Span("query", String("sql", "SELECT 1"))()
	for i := range 100 {
		tr.Span("short", Int("i", i))()
	}
	readyOnceWritten(t, path, `{"name":"query","ph":"B"`, `{"name":"decode","ph":"B"`)
}

// TestOpenSpansVisibleAfterKill: the file a killed process leaves shows
// what was running, as B events with their args, outermost first, and the
// spans that had ended as compact X events.
func TestOpenSpansVisibleAfterKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "open.json")
	evs := killReady(t, childtest.Command("TestOpenSpansChild", openChildEnv+"="+path), path)

	argsOf := func(args []Arg) map[string]any {
		m := map[string]any{}
		for _, a := range args {
			m[a.key] = a.str
		}
		return m
	}
	request, query := find(t, evs, "B", "request"), find(t, evs, "B", "query")
	assert.Equal(t, map[string]any{"path": "/upload", "bytes": float64(1 << 20)}, request.Args)
	assert.Equal(t, map[string]any{"sql": "SELECT 1"}, query.Args)
	assert.Equal(t, request.Tid, query.Tid)
	assert.LessOrEqual(t, request.Ts, query.Ts)
	for _, s := range []struct {
		name string
		args []Arg
	}{{"batch", manyArgs("b", 7)}, {"item", manyArgs("i", 5)}, {"decode", manyArgs("d", 9)}} {
		assert.Equal(t, argsOf(s.args), find(t, evs, "B", s.name).Args, s.name)
	}
	// A short span the flusher found open for longer than its 10 ms
	// interval (its goroutine descheduled, on a loaded machine) is a B
	// and an E; the others are X events.
	var order []string
	for _, e := range byPhase(evs, "B") {
		if e.Name != "short" {
			order = append(order, e.Name)
		}
	}
	assert.Less(t, slices.Index(order, "request"), slices.Index(order, "query"), "outermost first: %v", order)
	assert.Less(t, slices.Index(order, "batch"), slices.Index(order, "item"), "outermost first: %v", order)
	assert.Less(t, slices.Index(order, "item"), slices.Index(order, "decode"), "outermost first: %v", order)
	assert.Len(t, order, 5, "only the open spans are B events: %v", order)
	for _, e := range byPhase(evs, "E") {
		assert.Equal(t, "short", e.Name, "nothing else had ended")
	}

	var shorts []event // each short span's X, or its B
	for _, e := range byName(evs, "short") {
		if e.Ph != "E" {
			shorts = append(shorts, e)
		}
	}
	require.Len(t, shorts, 100)
	for i, e := range shorts {
		assert.Contains(t, []string{"X", "B"}, e.Ph)
		assert.Equal(t, float64(i), e.Args["i"])
		assert.Equal(t, request.Tid, e.Tid)
	}
	assert.Len(t, byPhase(evs, "E"), len(byPhase(shorts, "B")), "every short B has its E")
}

// TestCloseWritesOpenSpans: spans still open when the tracer is closed are
// written as B events, however young, so a trace stopped by a signal or a
// panic shows what was running.
func TestCloseWritesOpenSpans(t *testing.T) {
	tr, path := newTestTracer(t)
	_ = tr.Span("open", Int("n", 1), String("s", "x"), Bool("b", true), Float64("f", 0.5), Int("m", 2))
	tr.Span("closed")()
	require.NoError(t, tr.Close())
	evs := readClosed(t, path)
	b := find(t, evs, "B", "open")
	assert.Equal(t, map[string]any{"n": 1.0, "s": "x", "b": true, "f": 0.5, "m": 2.0}, b.Args)
	find(t, evs, "X", "closed")
	assert.Empty(t, byPhase(evs, "E"))
	assert.EqualValues(t, 3, tr.Stats().Events, "the two spans and the goroutine's name")
}
