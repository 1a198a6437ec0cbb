package tables

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
)

// rows is a Sink that keeps every row.
type rows struct {
	slices    []Slice
	counters  []Counter
	flows     []Flow
	tracks    []Track
	threads   []Thread
	processes []Process
}

func (r *rows) Slice(s *Slice) error     { r.slices = append(r.slices, *s); return nil }
func (r *rows) Counter(c *Counter) error { r.counters = append(r.counters, *c); return nil }
func (r *rows) Flow(f *Flow) error       { r.flows = append(r.flows, *f); return nil }
func (r *rows) Track(t *Track) error     { r.tracks = append(r.tracks, *t); return nil }
func (r *rows) Thread(t *Thread) error   { r.threads = append(r.threads, *t); return nil }
func (r *rows) Process(p *Process) error { r.processes = append(r.processes, *p); return nil }

func build(t *testing.T, maxPending int, paths ...string) (*rows, Report) {
	t.Helper()
	r := &rows{}
	b := NewBuilder(r)
	b.MaxPending = maxPending
	require.NoError(t, b.Build(paths, nil))
	return r, b.Report
}

// sliceKey is what is compared with trace_processor's slice table: ids
// differ, so a slice's parent is named by its name and ts.
const sliceQuery = `SELECT s.ts, s.dur, s.name, s.depth, coalesce(p.name, ''), coalesce(p.ts, -1)
FROM slice s LEFT JOIN slice p ON p.id = s.parent_id ORDER BY 1, 2, 3, 4, 5, 6;`

func sliceKeys(r *rows) [][]string {
	byID := map[int64]*Slice{}
	for i := range r.slices {
		byID[r.slices[i].ID] = &r.slices[i]
	}
	var out [][]string
	for _, s := range r.slices {
		pname, pts := "", int64(-1)
		if s.ParentID != nil {
			p := byID[*s.ParentID]
			pname, pts = p.Name, p.TS
		}
		out = append(out, []string{fmt.Sprint(s.TS), fmt.Sprint(s.Dur), s.Name, fmt.Sprint(s.Depth), pname, fmt.Sprint(pts)})
	}
	slices.SortFunc(out, func(a, b []string) int {
		for i := range 6 {
			if c := compareCell(a[i], b[i], i != 2 && i != 4); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

func compareCell(a, b string, num bool) int {
	if num {
		var x, y int64
		fmt.Sscan(a, &x)
		fmt.Sscan(b, &y)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(a, b)
}

// writeTrace records a trace with the tracer package: nested spans on
// goroutines, B/E spans, async operations with children, instants of
// every scope, counters and flows, with spans sharing a start.
func writeTrace(t *testing.T, path string) {
	tr, err := tracer.New(path)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr.SetGoroutineName(fmt.Sprintf("worker %d", g))
			endLong := tr.LongSpan("long", tracer.Int("g", g))
			for i := range 20 {
				end := tr.Span("request", tracer.String("route", fmt.Sprintf("/r%d", i%3)))
				f := tr.FlowBegin("job")
				op := tr.AsyncBegin("op")
				inner := tr.Span("decode")
				tr.Instant("mark")
				deeper := tr.Span("parse")
				time.Sleep(20 * time.Microsecond)
				deeper()
				inner()
				child := op.Begin("step")
				tr.Counter("queue", tracer.Int("depth", i), tracer.Int("busy", g))
				child.End()
				f.Step()
				op.End()
				end2 := tr.Span("store")
				f.End()
				end2()
				end()
			}
			tr.InstantProcess("phase")
			endLong()
		}()
	}
	wg.Wait()
	tr.InstantGlobal("done")
	require.NoError(t, tr.Close())
}

// writeSamples writes, in dir, a trace the tracer package recorded (see
// writeTrace) and the handWritten one, and returns their paths.
func writeSamples(t *testing.T, dir string) (recorded, hand string) {
	recorded, hand = filepath.Join(dir, "recorded.json"), filepath.Join(dir, "hand.json")
	writeTrace(t, recorded)
	require.NoError(t, os.WriteFile(hand, []byte(handWritten), 0o644))
	return recorded, hand
}

// handWritten is a trace in start order, as other producers write it:
// B/E pairs, X events written as they begin, an instant at a slice's
// end (not its child), a B never ended; on tid 3, siblings that come
// in start order before their parent (as the tracer package writes
// them); on tid 4, X events in start order.
const handWritten = `[
{"ph":"M","name":"process_name","pid":1,"tid":1,"args":{"name":"hand"}},
{"ph":"B","name":"a","pid":1,"tid":1,"ts":0},
{"ph":"X","name":"b","pid":1,"tid":1,"ts":1,"dur":5},
{"ph":"X","name":"c","pid":1,"tid":1,"ts":1,"dur":2},
{"ph":"i","name":"at-end","pid":1,"tid":1,"ts":3,"s":"t"},
{"ph":"E","pid":1,"tid":1,"ts":10},
{"ph":"X","name":"d","pid":1,"tid":1,"ts":10,"dur":1},
{"ph":"X","name":"e","pid":1,"tid":2,"ts":4,"dur":4},
{"ph":"X","name":"f","pid":1,"tid":2,"ts":2,"dur":9},
{"ph":"B","name":"open","pid":1,"tid":2,"ts":20},
{"ph":"X","name":"g","pid":1,"tid":2,"ts":21,"dur":1},
{"ph":"X","name":"child1","pid":1,"tid":3,"ts":1,"dur":1},
{"ph":"X","name":"child2","pid":1,"tid":3,"ts":3,"dur":1},
{"ph":"X","name":"parent","pid":1,"tid":3,"ts":0,"dur":10},
{"ph":"X","name":"first","pid":1,"tid":4,"ts":0,"dur":10},
{"ph":"X","name":"inner","pid":1,"tid":4,"ts":1,"dur":1},
{"ph":"X","name":"next","pid":1,"tid":4,"ts":12,"dur":1},
{"ph":"b","name":"op","cat":"c","pid":1,"tid":1,"ts":2,"id2":{"local":"0x1"}},
{"ph":"b","name":"sub","cat":"c","pid":1,"tid":1,"ts":3,"id2":{"local":"0x1"}},
{"ph":"n","name":"note","cat":"c","pid":1,"tid":1,"ts":4,"id2":{"local":"0x1"}},
{"ph":"e","name":"sub","cat":"c","pid":1,"tid":1,"ts":5,"id2":{"local":"0x1"}},
{"ph":"e","name":"op","cat":"c","pid":1,"tid":1,"ts":6,"id2":{"local":"0x1"}}
]
`

// TestSlicesMatchTraceProcessor checks the slice table against
// trace_processor's for the same files: every slice, its ts, dur, name,
// depth and parent, for a file the tracer package wrote (children before
// parents) and one in start order.
func TestSlicesMatchTraceProcessor(t *testing.T) {
	dir := t.TempDir()
	recorded, hand := writeSamples(t, dir)

	service := filepath.Join(dir, "service.json")
	require.NoError(t, os.WriteFile(service, endOrdered(4, 500), 0o644))
	for _, tc := range []struct {
		path       string
		maxPending int
	}{
		{recorded, 0},
		{hand, 0},
		// Requests are top-level: written early, past MaxPending, they
		// still have their depths (those that ended first are written).
		{service, 64},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			want := tracecheck.PerfettoSQL(t, tc.path, sliceQuery)[1:]
			r, rep := build(t, tc.maxPending, tc.path)
			assert.Zero(t, rep.Unsure)
			assert.Empty(t, rep.Late, "no track to nest again")
			require.Equal(t, want, sliceKeys(r))
			assert.Equal(t, int64(len(want)), rep.Slices)
		})
	}
}

// TestZeroLengthTiesAreNoOrder: two slices of the same extent nest the
// later in the earlier whatever the file's order (here an instant and
// an X of no duration at one time, written children first as the tracer
// package writes them), so they do not make a track look written
// parents first: the instant before them, at the start of the span that
// comes last and holds them all, waits for it (it was written at depth 0
// before, and counted as unsure).
func TestZeroLengthTiesAreNoOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zero.json")
	require.NoError(t, os.WriteFile(path, []byte(`[
{"name":"mark","ph":"i","ts":1,"pid":1,"tid":2},
{"name":"inline","ph":"X","ts":4,"dur":0,"pid":1,"tid":2},
{"name":"mark","ph":"i","ts":4,"pid":1,"tid":2},
{"name":"block","ph":"X","ts":4,"dur":2,"pid":1,"tid":2},
{"name":"walk","ph":"X","ts":3,"dur":5,"pid":1,"tid":2},
{"name":"emit","ph":"X","ts":1,"dur":90,"pid":1,"tid":2}
]`), 0o644))
	want := tracecheck.PerfettoSQL(t, path, sliceQuery)[1:]
	r, rep := build(t, 0, path)
	assert.Zero(t, rep.Unsure)
	require.Equal(t, want, sliceKeys(r))
}

// endOrdered returns a trace of requests on threads, each a request
// with two children, one of which has a child, written as the tracer
// package writes them: each slice when it ends, the threads' requests
// interleaved.
func endOrdered(threads, requests int) []byte {
	b := []byte("[\n")
	x := func(name string, tid, ts, dur int) {
		b = fmt.Appendf(b, `{"ph":"X","name":%q,"pid":1,"tid":%d,"ts":%d,"dur":%d},`+"\n", name, tid, ts, dur)
	}
	for i := range requests {
		for tid := 1; tid <= threads; tid++ { // not tid 0: trace_processor makes it the process's main thread, tid 1
			at := i*100 + tid
			x("decode", tid, at+10, 10)
			x("scan", tid, at+30, 5)
			x("query", tid, at+25, 20)
			x("request", tid, at, 90)
		}
	}
	return append(b[:len(b)-2], "\n]\n"...)
}

// TestMaxPendingBoundsMemory checks that past MaxPending slices are
// written before their track is complete, every one of them still
// written once, and those a later slice encloses (the goroutines' long
// spans) counted as unsure.
func TestMaxPendingBoundsMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recorded.json")
	writeTrace(t, path)
	all, _ := build(t, 0, path)
	r, rep := build(t, 10, path)
	assert.Positive(t, rep.Unsure)
	assert.NotEmpty(t, rep.Late, "the tracks of the slices counted as unsure")
	assert.Len(t, r.slices, len(all.slices))
	ids := map[int64]bool{}
	for _, s := range r.slices {
		assert.False(t, ids[s.ID], "slice %d written twice", s.ID)
		ids[s.ID] = true
	}
}

// TestCountersAndFlowsMatchTraceProcessor checks the counter and flow
// tables against trace_processor's: per counter track, its rows and
// their sum; the arrows, by the names and times of their two slices.
func TestCountersAndFlowsMatchTraceProcessor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recorded.json")
	writeTrace(t, path)
	r, rep := build(t, 0, path)
	assert.Zero(t, rep.UnboundFlows)

	want := tracecheck.PerfettoSQL(t, path, `SELECT t.name, count(*), sum(c.value) FROM counter c JOIN counter_track t ON t.id = c.track_id GROUP BY 1 ORDER BY 1;`)[1:]
	type agg struct {
		n   int
		sum float64
	}
	byName := map[string]*agg{}
	for _, c := range r.counters {
		if byName[c.Name] == nil {
			byName[c.Name] = &agg{}
		}
		byName[c.Name].n++
		byName[c.Name].sum += c.Value
	}
	var got [][]string
	for name, a := range byName {
		got = append(got, []string{name, fmt.Sprint(a.n), fmt.Sprintf("%f", a.sum)})
	}
	slices.SortFunc(got, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	require.Equal(t, want, got)

	// trace_processor binds a flow event to the slice on top of its
	// thread's stack, which may have ended before the event (its stack
	// is popped only when the next slice begins): so do the tables.
	require.NotEmpty(t, r.flows)
	require.Equal(t, perfettoArrows(t, path), arrows(r))
}

// TestOpenAndRotated checks a B never ended, alone on its thread (a
// slice with dur -1, as in trace_processor), and a rotated set: the B
// events the tracer package writes again at the top of the next file
// are one slice, not two.
func TestOpenAndRotated(t *testing.T) {
	dir := t.TempDir()
	alone := filepath.Join(dir, "alone.json")
	require.NoError(t, os.WriteFile(alone, []byte(`[{"ph":"B","name":"open","pid":1,"tid":9,"ts":5},`+"\n"), 0o644))
	want := tracecheck.PerfettoSQL(t, alone, sliceQuery)[1:]
	r, _ := build(t, 0, alone)
	require.Equal(t, want, sliceKeys(r))
	require.Len(t, r.slices, 1)

	base := filepath.Join(dir, "rot.json")
	tr, err := tracer.New(base, tracer.WithMaxFileSize(64<<10))
	require.NoError(t, err)
	end := tr.LongSpan("whole run")
	for i := range 2000 {
		tr.Span("step", tracer.Int("i", i))()
		if i%200 == 0 {
			require.NoError(t, tr.Flush()) // batches to rotate at: Close never rotates
		}
	}
	end()
	require.NoError(t, tr.Close())
	files, err := filepath.Glob(filepath.Join(dir, "rot.*json"))
	require.NoError(t, err)
	require.Greater(t, len(files), 2, "rotated")
	r, rep := build(t, 0, files...)
	var whole []Slice
	for _, s := range r.slices {
		assert.GreaterOrEqual(t, s.Dur, int64(0), "%s never ended", s.Name)
		if s.Name == "whole run" {
			whole = append(whole, s)
		}
	}
	require.Len(t, whole, 1)
	assert.Len(t, r.processes, 1, "one process")
	assert.Equal(t, int64(2001), rep.Slices)
}

// TestLateB: the B of a span that began first comes after 300,000 spans
// it holds (a program's "main" span, written at the tracer's first flush
// after the spans recorded before it): every one of them gets it as its
// parent, and its self time is its own, as in trace_processor.
func TestLateB(t *testing.T) {
	const n = 300_000
	var b strings.Builder
	b.WriteString("[\n")
	for i := range n {
		fmt.Fprintf(&b, `{"name":"child","ph":"X","ts":%d,"dur":1,"pid":1,"tid":1},`+"\n", 10+2*i)
	}
	fmt.Fprintf(&b, `{"name":"main","ph":"B","ts":0,"pid":1,"tid":1},`+"\n")
	fmt.Fprintf(&b, `{"name":"main","ph":"E","ts":%d,"pid":1,"tid":1}`+"\n]\n", 20+2*n)
	path := filepath.Join(t.TempDir(), "late.json")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	r, rep := build(t, 0, path)
	assert.Zero(t, rep.Unsure)
	require.Len(t, r.slices, n+1)
	var mainID int64
	for _, s := range r.slices {
		if s.Name == "main" {
			mainID = s.ID
		}
	}
	for _, s := range r.slices {
		if s.Name == "child" {
			require.NotNil(t, s.ParentID)
			require.Equal(t, mainID, *s.ParentID)
			require.Equal(t, int32(1), s.Depth)
		}
	}
	r, rep = build(t, 1000, path)
	assert.Positive(t, rep.Unsure)
	assert.Contains(t, rep.Warnings()[0], "run again with -max-pending 4000 or more")
}

// TestLinksBetweenFiles: the raw files of a client and a server, read
// together, hold the arrows tracer merge binds in their merged file: from
// the span that sent a traceparent (traceparent.out) to the one that
// received it (traceparent.in), in another process's file.
func TestLinksBetweenFiles(t *testing.T) {
	dir := t.TempDir()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	client := filepath.Join(dir, "client.json")
	server := filepath.Join(dir, "server.json")
	require.NoError(t, os.WriteFile(client, []byte(`[
{"name":"process_name","ph":"M","pid":10,"tid":0,"args":{"name":"client","ts0_unix_ns":1000000000}},
{"name":"GET /x","ph":"X","ts":10,"dur":100,"pid":10,"tid":1,"args":{"traceparent.out":"`+tp+`"}}
]`), 0o644))
	require.NoError(t, os.WriteFile(server, []byte(`[
{"name":"process_name","ph":"M","pid":20,"tid":0,"args":{"name":"server","ts0_unix_ns":1000005000}},
{"name":"/x","ph":"X","ts":10,"dur":50,"pid":20,"tid":1,"args":{"traceparent.in":"`+tp+`"}}
]`), 0o644))
	r, _ := build(t, 0, client, server)
	require.Len(t, r.flows, 1)
	byID := map[int64]Slice{}
	for _, s := range r.slices {
		byID[s.ID] = s
	}
	assert.Equal(t, "GET /x", byID[r.flows[0].SliceOut].Name)
	assert.Equal(t, "/x", byID[r.flows[0].SliceIn].Name)
}

// TestDeepChain nests X events 600 levels deep, parents first: the
// slices below trace_processor's 512 levels are left out, as it drops
// them, and the others match its table.
func TestDeepChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deep.json")
	require.NoError(t, os.WriteFile(path, deepChain(600), 0o644))
	r, rep := build(t, 0, path)
	assert.Equal(t, int64(88), rep.TooDeep)
	want := tracecheck.PerfettoSQL(t, path, sliceQuery)[1:]
	assert.Equal(t, want, sliceKeys(r))
}

// deepChain returns a trace of n X events, each inside the one before.
func deepChain(n int) []byte {
	b := []byte("[\n")
	for i := range n {
		b = fmt.Appendf(b, `{"name":"r","ph":"X","ts":%d,"dur":%d,"pid":1,"tid":1},`+"\n", i, 2*(n-i))
	}
	return append(b[:len(b)-2], "\n]\n"...)
}

// BenchmarkBuildDeep builds the tables of a chain of 200,000 nested X
// events, parents first: the time must grow with the depth, not its
// square (it took 16 s at 40,000 levels before the path to the last
// slice was kept; 0.15 s after).
func BenchmarkBuildDeep(b *testing.B) {
	path := filepath.Join(b.TempDir(), "deep.json")
	require.NoError(b, os.WriteFile(path, deepChain(200_000), 0o644))
	for b.Loop() {
		bl := NewBuilder(&rows{})
		require.NoError(b, bl.Build([]string{path}, nil))
	}
}

// TestNotATrace gives the Builder files that are no JSON trace, alone and
// after a trace, read ahead and inline: the error names the file and
// says what it is, for sql and export to stop on.
func TestNotATrace(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	require.NoError(t, os.WriteFile(good, []byte(`[{"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1}]`), 0o644))
	for _, content := range []string{"hello, not a trace\n", "\x00\x01\x02\xfe"} {
		bad := filepath.Join(dir, "bad.txt")
		require.NoError(t, os.WriteFile(bad, []byte(content), 0o644))
		for _, paths := range [][]string{{bad}, {good, bad}} {
			for _, inline := range []bool{false, true} {
				b := NewBuilder(&rows{})
				if inline {
					b.read = readAhead{batches: -1}
				}
				err := b.Build(paths, nil)
				require.ErrorContains(t, err, bad+":1: not a JSON trace", "%q, %v, inline %v", content, paths, inline)
			}
		}
	}
}
