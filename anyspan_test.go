package tracer

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onGoroutine runs f on a new goroutine and waits for it.
func onGoroutine(f func()) {
	var wg sync.WaitGroup
	wg.Go(f)
	wg.Wait()
}

// anyDrawn is how a test expects a SpanHandle to be drawn.
type anyDrawn struct {
	track string // on the track of the goroutine whose span is named so, nested there (async: began there, g1 if "")
	async bool   // as an async slice
	inner string // with this span inside it on the track, if not ""
	flow  string // with a flow from the parent to the slice named so, if not ""
	args  []string
}

// TestSpanHandle records SpanHandles ended in every way SpanHandle's doc
// lists and checks how the file draws them: nested on their goroutine's
// track (X, or B/E), or as async slices, with the spans of the goroutine
// still nested, a flow from the parent, both importers agreeing.
func TestSpanHandle(t *testing.T) {
	long := 30 * time.Millisecond // three flush intervals: its B is written first
	tests := []struct {
		name string
		run  func(t *Tracer)
		want map[string]anyDrawn
	}{{
		name: "nested on its goroutine",
		run: func(t *Tracer) {
			defer t.Span("g1")()
			h := t.StartSpan("h", String("k", "v"))
			t.Span("inner")()
			h.End(Int("status", 200))
		},
		want: map[string]anyDrawn{"h": {track: "g1", inner: "inner", args: []string{"k", "status"}}},
	}, {
		name: "ended on another goroutine",
		run: func(t *Tracer) {
			defer t.Span("g1")()
			h := t.StartSpan("h", String("k", "v"))
			onGoroutine(func() { defer t.Span("g2")(); h.End(Int("status", 200)) })
		},
		want: map[string]anyDrawn{"h": {async: true, args: []string{"k", "status"}}},
	}, {
		name: "ended while a span inside it is open",
		run: func(t *Tracer) {
			defer t.Span("g1")()
			h := t.StartSpan("h")
			end := t.Span("inner")
			h.End()
			end()
		},
		want: map[string]anyDrawn{"h": {async: true}},
	}, {
		name: "a span below it ends first",
		run: func(t *Tracer) {
			defer t.Span("g1")()
			end := t.Span("outer")
			h := t.StartSpan("h")
			end()
			h.End()
		},
		want: map[string]anyDrawn{"h": {async: true}},
	}, {
		name: "child nested on another goroutine",
		run: func(t *Tracer) {
			defer t.Span("g1")()
			p := t.StartSpan("parent")
			onGoroutine(func() {
				defer t.Span("g2")()
				c := p.StartChild("child")
				t.Span("work")()
				c.End()
			})
			p.End()
		},
		want: map[string]anyDrawn{
			"parent": {track: "g1"},
			"child":  {track: "g2", inner: "work", flow: "child"},
		},
	}, {
		name: "child ended elsewhere",
		run: func(t *Tracer) {
			defer t.Span("g1")()
			p := t.StartSpan("parent")
			var c SpanHandle
			onGoroutine(func() { defer t.Span("g2")(); c = p.StartChild("child") })
			onGoroutine(func() { defer t.Span("g3")(); c.End() })
			p.End()
		},
		want: map[string]anyDrawn{
			"parent": {track: "g1"},
			"child":  {async: true, track: "g2", flow: "g2"},
		},
	}, {
		name: "child nested in its parent on one goroutine",
		run: func(t *Tracer) {
			defer t.Span("g1")()
			p := t.StartSpan("parent")
			c := p.StartChild("child")
			c.End()
			p.End()
		},
		want: map[string]anyDrawn{"parent": {track: "g1", inner: "child"}, "child": {track: "g1"}},
	}, {
		name: "long, B and E",
		run: func(t *Tracer) {
			defer t.Span("g1")()
			h := t.StartSpan("h")
			time.Sleep(long)
			_ = t.Flush() // its B is written now
			t.Span("inner")()
			h.End()
		},
		want: map[string]anyDrawn{"h": {track: "g1", inner: "inner"}},
	}, {
		name: "long, ended on another goroutine",
		run: func(t *Tracer) {
			defer t.Span("g1")()
			h := t.StartSpan("h")
			time.Sleep(long)
			_ = t.Flush() // its B is written now
			onGoroutine(func() { defer t.Span("g2")(); h.End() })
		},
		want: map[string]anyDrawn{"h": {track: "g1"}}, // its B is written: it stays on the track
	}, {
		name: "long, ended under an open span",
		run: func(t *Tracer) {
			defer t.Span("g1")()
			h := t.StartSpan("h")
			time.Sleep(long)
			_ = t.Flush() // its B is written now
			end := t.Span("inner")
			h.End(Int("status", 1))
			end()
		},
		want: map[string]anyDrawn{"h": {track: "g1", inner: "inner"}}, // drawn until inner ends
	}, {
		name: "long, a span below it ends first",
		run: func(t *Tracer) {
			defer t.Span("g1")()
			end := t.Span("outer")
			h := t.StartSpan("h")
			time.Sleep(long)
			_ = t.Flush() // its B is written now
			end()
			h.End()
		},
		want: map[string]anyDrawn{"h": {track: "g1"}}, // ends with outer
	}}
	var paths []string
	var flowCounts []int
	dir := t.TempDir()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("any%d.json", i))
			tr, err := New(path, WithFlushInterval(10*time.Millisecond))
			require.NoError(t, err)
			tc.run(tr)
			require.NoError(t, tr.Close())
			assert.Zero(t, tr.Stats().Unmatched)
			assert.Zero(t, tr.Stats().Forgotten)

			evs := tracecheck.Read(t, path)
			tracks := tracecheck.Tracks(t, evs)
			ops := tracecheck.Async(t, evs)
			tidOf := map[string]uint64{}
			for tid, ss := range tracks {
				for _, s := range ss {
					tidOf[s.Name] = tid
				}
			}
			type flowEnds struct{ s, f []tracecheck.Event }
			flows := map[string]*flowEnds{}
			for _, e := range evs {
				if e.Ph == "s" || e.Ph == "f" {
					fe := flows[e.ID.String()]
					if fe == nil {
						fe = &flowEnds{}
						flows[e.ID.String()] = fe
					}
					if e.Ph == "s" {
						fe.s = append(fe.s, e)
					} else {
						fe.f = append(fe.f, e)
						assert.Equal(t, "e", e.Bp)
					}
				}
			}
			wantFlows := 0
			for name, w := range tc.want {
				var async []tracecheck.AsyncOp
				for _, op := range ops {
					if op.Begin.Name == name {
						async = append(async, op)
					}
				}
				var args map[string]any
				if w.async {
					require.Len(t, async, 1, "%s: one async slice", name)
					began := "g1"
					if w.track != "" {
						began = w.track
					}
					assert.Equal(t, tidOf[began], async[0].Begin.Tid, "%s: on the track of the goroutine it began on", name)
					args = async[0].Begin.Args
					for k, v := range async[0].End.Args {
						args = merge(args, k, v)
					}
					assert.Empty(t, tracecheck.SlicesNamed(tracks, name), "%s: not on a track too", name)
				} else {
					require.Empty(t, async, "%s: not async", name)
					ss := tracecheck.SlicesNamed(tracks, name)
					require.Len(t, ss, 1, "%s: one slice", name)
					assert.Equal(t, tidOf[w.track], ss[0].Tid, "%s: on %s's track", name, w.track)
					outer, ok := tracecheck.Enclosing(tracks, ss[0].Tid, ss[0].Start)
					require.True(t, ok)
					args = ss[0].Args
					if w.inner != "" {
						in := tracecheck.SlicesNamed(tracks, w.inner)
						require.Len(t, in, 1)
						const ns = 1e-3 / 2 // float µs: far less than the file's nanoseconds
						assert.True(t, ss[0].Start <= in[0].Start+ns && in[0].End <= ss[0].End+ns, "%s contains %s", name, w.inner)
					}
					_ = outer
				}
				for _, k := range w.args {
					assert.Contains(t, args, k, "%s's args", name)
				}
				if w.flow != "" {
					wantFlows++
					var found bool
					for _, fe := range flows {
						if len(fe.s) == 1 && len(fe.f) == 1 && fe.s[0].Name == name {
							found = true
							from, ok := tracecheck.Enclosing(tracks, fe.s[0].Tid, fe.s[0].Ts)
							require.True(t, ok)
							assert.Equal(t, tidOf["g1"], from.Tid, "%s's flow starts on its parent's goroutine", name)
							to, ok := tracecheck.Enclosing(tracks, fe.f[0].Tid, fe.f[0].Ts)
							require.True(t, ok)
							assert.Equal(t, w.flow, to.Name, "%s's flow ends at", name)
						}
					}
					assert.True(t, found, "%s has a flow from its parent", name)
				}
			}
			assert.Len(t, flows, wantFlows, "one flow per child drawn off its parent's goroutine")

			paths = append(paths, path)
			flowCounts = append(flowCounts, wantFlows)
		})
	}
	// Both importers load every file without a warning, with the flows.
	perfetto, catapult := tracecheck.Import(t, paths...)
	for i := range paths {
		for _, r := range []tracecheck.Report{perfetto[i], catapult[i]} {
			assert.Equal(t, float64(flowCounts[i]), r.Totals()["flows"], "%s %s: flows", r["importer"], paths[i])
		}
	}
}

func merge(m map[string]any, k string, v any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m[k] = v
	return m
}

// TestSpanHandleEndTwice checks that a second End is counted and harmless.
func TestSpanHandleEndTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "twice.json")
	tr, err := New(path)
	require.NoError(t, err)
	h := tr.StartSpan("h")
	h.End()
	h.End()
	require.NoError(t, tr.Close())
	assert.Equal(t, uint64(1), tr.Stats().Unmatched)
	evs := tracecheck.Read(t, path)
	tracecheck.Tracks(t, evs)
	assert.Len(t, tracecheck.Named(evs, "h"), 1)
	var zero SpanHandle
	zero.End()
	assert.Zero(t, zero.StartChild("c").ID())
}

// TestSpanHandleAllocatesNothing: StartSpan, StartChild and End, on and
// off, with args or not.
func TestSpanHandleAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tr, _ := newTestTracer(t)
	var off *Tracer
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		h := tr.StartSpan("h", String("k", "v"))
		c := h.StartChild("c", Int("n", 1))
		c.End(Int("status", 200))
		h.End()
		off.StartSpan("off").End()
		StartSpan("std").End()
	}))
}

func anySpanBare() { StartSpan("x").End() }
func anySpanChild() {
	p := StartSpan("p")
	p.StartChild("c").End()
	p.End()
}

// BenchmarkSpanHandle times a SpanHandle started and ended on one
// goroutine (drawn as a Span), a parent with a child (two spans), and with
// tracing off; compare BenchmarkSpan.
func BenchmarkSpanHandle(b *testing.B) {
	b.Run("on", func(b *testing.B) { benchOn(b, anySpanBare) })
	b.Run("child/on", func(b *testing.B) { benchOn(b, anySpanChild) })
	b.Run("off", func(b *testing.B) { benchOff(b, anySpanBare) })
}
