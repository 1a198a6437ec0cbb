package tracetest_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/tracetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// handle is the code under test: a span with args, two children, and one
// on a goroutine of its own.
func handle(n int) {
	end := tracer.Span("handle", tracer.Category("http"), tracer.Int("n", n))
	defer func() { end(tracer.String("status", "ok")) }()
	tracer.Span("decode", tracer.Float64("ratio", 0.5))()
	func() {
		defer tracer.Span("store")()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			tracer.SetGoroutineName("writer")
			defer tracer.Span("write", tracer.Bool("sync", true))()
		}()
		wg.Wait()
	}()
}

func TestRecordSpans(t *testing.T) {
	rec := tracetest.Record(t)
	before := time.Now()
	handle(3)
	after := time.Now()

	spans := rec.Spans()
	require.Len(t, spans, 4)
	names := map[string]tracetest.Span{}
	for _, s := range spans {
		names[s.Name] = s
	}
	h, d, st, w := names["handle"], names["decode"], names["store"], names["write"]
	assert.Equal(t, "handle", spans[0].Name, "in order of start")

	assert.Equal(t, "http", h.Category)
	assert.Equal(t, map[string]any{"n": int64(3), "status": "ok"}, h.Args, "the start's and the end's args")
	assert.Equal(t, map[string]any{"ratio": 0.5}, d.Args)
	assert.Nil(t, st.Args)
	assert.Equal(t, map[string]any{"sync": true}, w.Args)

	assert.Nil(t, h.Parent)
	require.NotNil(t, d.Parent)
	assert.Equal(t, "handle", d.Parent.Name)
	require.NotNil(t, st.Parent)
	assert.Equal(t, "handle", st.Parent.Name)
	assert.Nil(t, w.Parent, "a span on another goroutine has no parent there")

	assert.Equal(t, h.Goroutine, d.Goroutine)
	assert.NotEqual(t, h.Goroutine, w.Goroutine)
	assert.Equal(t, "writer", w.GoroutineName)

	assert.False(t, h.Start.Before(before.Add(-time.Millisecond)), "start %v, before %v", h.Start, before)
	assert.False(t, h.Start.Add(h.Duration).After(after.Add(time.Millisecond)))
	for _, c := range []tracetest.Span{d, st} {
		assert.False(t, c.Start.Before(h.Start))
		assert.False(t, c.Start.Add(c.Duration).After(h.Start.Add(h.Duration)))
	}
	assert.False(t, w.Start.Before(st.Start))
	assert.Positive(t, st.Duration)

	assert.Len(t, rec.Named("decode"), 1)
	assert.Empty(t, rec.Named("missing"))
}

// TestRecordLongSpans checks spans written as B and E: open across a
// flush, LongSpan, and one still open, which Spans leaves out.
func TestRecordLongSpans(t *testing.T) {
	rec := tracetest.Record(t)
	endOuter := tracer.LongSpan("outer", tracer.Int("a", 1))
	require.NoError(t, tracer.Flush())
	tracer.Span("inner")()
	open := tracer.Span("open")
	assert.Equal(t, []string{"inner"}, spanNames(rec.Spans()))
	open()
	endOuter(tracer.Int("b", 2))

	spans := rec.Spans()
	require.Equal(t, []string{"outer", "inner", "open"}, spanNames(spans))
	assert.Equal(t, map[string]any{"a": int64(1), "b": int64(2)}, spans[0].Args)
	for _, s := range spans[1:] {
		require.NotNil(t, s.Parent)
		assert.Equal(t, "outer", s.Parent.Name)
	}
}

func spanNames(spans []tracetest.Span) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	return names
}

// TestRecordParallel runs tests in parallel that record spans of the same
// names: each sees its own goroutine's only, and the spans of goroutines
// the tests start.
func TestRecordParallel(t *testing.T) {
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			rec := tracetest.Record(t)
			for j := 0; j < 50; j++ {
				tracer.Span("step", tracer.Int("test", i), tracer.Int("j", j))()
				time.Sleep(50 * time.Microsecond)
			}
			spans := rec.Named("step")
			require.Len(t, spans, 50)
			for j, s := range spans {
				assert.Equal(t, map[string]any{"test": int64(i), "j": int64(j)}, s.Args)
			}
		})
	}
}

// TestRecordStops checks that the last Recorder's cleanup stops the
// default tracer it started, and that a later test starts a new one.
func TestRecordStops(t *testing.T) {
	if tracer.Default() != nil {
		t.Skip("a trace was asked for")
	}
	for range 2 {
		t.Run("", func(t *testing.T) {
			rec := tracetest.Record(t)
			tracer.Span("x")()
			assert.Len(t, rec.Spans(), 1, "only this test's span")
		})
		assert.Nil(t, tracer.Default())
	}
}

// TestRecordBesideAFile: with a default tracer writing a file already
// (TRACER_FILE, as `TRACER_FILE='trace-{pid}.json' go test ./...` starts
// it in every test binary), Record reads a tee of it: the test sees its
// spans, the file gets them too, and the tracer goes on after the test.
// The test runs itself in a child process under TRACER_FILE.
func TestRecordBesideAFile(t *testing.T) {
	if os.Getenv("TRACETEST_CHILD") == "1" {
		require.NotNil(t, tracer.Default(), "TRACER_FILE started the default tracer")
		d := tracer.Default()
		t.Run("recorded", func(t *testing.T) {
			rec := tracetest.Record(t)
			func() {
				defer tracer.Span("outer", tracer.Int("n", 1))()
				tracer.Span("inner")()
			}()
			spans := rec.Spans()
			require.Len(t, spans, 2)
			inner := rec.Named("inner")
			require.Len(t, inner, 1)
			require.NotNil(t, inner[0].Parent)
			assert.Equal(t, "outer", inner[0].Parent.Name)
			assert.Equal(t, int64(1), rec.Named("outer")[0].Args["n"])
		})
		assert.Same(t, d, tracer.Default(), "the file's tracer goes on after Record's test")
		tracer.Span("after the test")()
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRecordBesideAFile$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TRACETEST_CHILD=1", "TRACER_FILE="+filepath.Join(dir, "trace-{pid}.json"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	files, err := filepath.Glob(filepath.Join(dir, "trace-*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1, "%s", out)
	evs := tracecheck.Read(t, files[0]) // closed by tracetest.Main: strict JSON
	tracks := tracecheck.Tracks(t, evs)
	for _, name := range []string{"outer", "inner", "after the test"} {
		assert.Len(t, tracecheck.SlicesNamed(tracks, name), 1, "%s is in the file", name)
	}
}

type id int

func (i *id) String() string { return fmt.Sprintf("id-%d", int(*i)) }

// TestArgTypes checks the Go type and value each kind of arg comes back
// with, as Recorder.Spans documents them.
func TestArgTypes(t *testing.T) {
	rec := tracetest.Record(t)
	when := time.Date(2026, 11, 27, 8, 30, 0, 500, time.UTC)
	i := id(7)
	tracer.Span("args",
		tracer.String("string", "s"),
		tracer.Bool("bool", true),
		tracer.Int("int", -3),
		tracer.Int64("int64", math.MaxInt64),
		tracer.Uint64("small uint64", 9),
		tracer.Uint64("large uint64", math.MaxUint64),
		tracer.Float64("integral float", 2),
		tracer.Float64("float", 0.25),
		tracer.Float64("nan", math.NaN()),
		tracer.Float64("inf", math.Inf(-1)),
		tracer.Duration("duration", 1500*time.Microsecond),
		tracer.Time("time", when),
		tracer.Stringer("stringer", &i),
		tracer.Err(errors.New("failed")),
	)()
	spans := rec.Spans()
	require.Len(t, spans, 1)
	assert.Equal(t, map[string]any{
		"string":         "s",
		"bool":           true,
		"int":            int64(-3),
		"int64":          int64(math.MaxInt64),
		"small uint64":   int64(9),
		"large uint64":   float64(math.MaxUint64),
		"integral float": int64(2),
		"float":          0.25,
		"nan":            "NaN",
		"inf":            "-Inf",
		"duration":       "1.5ms",
		"time":           "2026-11-27T08:30:00.0000005Z",
		"stringer":       "id-7",
		"error":          "failed",
	}, spans[0].Args)
}
