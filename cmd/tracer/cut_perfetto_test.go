package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// window asks trace_processor, in one run (its start costs more than the
// queries), what shows in the window [from, to) (ns): the thread slices,
// clipped to it (name, thread, start, duration, depth), and the arrows
// between two slices that show in it (each end's name, clipped start and
// depth), one line each, sorted.
func window(t *testing.T, path string, from, to int64) (slicesIn, flowsIn []string) {
	t.Helper()
	in := func(s string) string {
		return fmt.Sprintf(`((%[1]s.dur = 0 and %[1]s.ts >= %[2]d and %[1]s.ts < %[3]d) or (%[1]s.dur != 0 and %[1]s.ts < %[3]d and (%[1]s.dur < 0 or %[1]s.ts + %[1]s.dur > %[2]d)))`, s, from, to)
	}
	q := fmt.Sprintf(`select 'slice' as kind, printf('%%s tid %%d [%%d +%%d] depth %%d', s.name, t.tid, max(s.ts, %[1]d),
    min(case when s.dur < 0 then %[2]d else s.ts + s.dur end, %[2]d) - max(s.ts, %[1]d), s.depth) as row
  from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid) where %[3]s
union all
select 'flow', printf('%%s@%%d/%%d -> %%s@%%d/%%d', o.name, max(o.ts, %[1]d), o.depth, i.name, max(i.ts, %[1]d), i.depth)
  from flow f join slice o on f.slice_out = o.id join slice i on f.slice_in = i.id where %[4]s and %[5]s;`,
		from, to, in("s"), in("o"), in("i"))
	for _, r := range tracecheck.Query(t, path, q) {
		if r["kind"] == "slice" {
			slicesIn = append(slicesIn, r["row"])
		} else {
			flowsIn = append(flowsIn, r["row"])
		}
	}
	slices.Sort(slicesIn)
	slices.Sort(flowsIn)
	return slicesIn, flowsIn
}

// compareCut cuts [from, to] out of the trace at path (to 0: to the end)
// and checks that trace_processor shows in the cut the slices, clipped,
// their nesting and the flows it shows in that window of the original.
func compareCut(t *testing.T, path string, from, to int64) {
	t.Helper()
	compareCutWith(t, path, from, to, false, false)
}

// compareCutWith is compareCut: with rounded, the slices' times are left
// out (trace_processor rounds absolute microseconds to 256 ns, differently
// in a cut); with kept, the cut must keep every arrow of the window and
// may hold more: trace_processor binds a flow event to a slice that ended
// before it, which in the window may be another.
func compareCutWith(t *testing.T, path string, from, to int64, rounded, kept bool) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cut.json")
	args := []string{"cut", "-q", "-from", time.Duration(from).String(), "-o", out, path}
	if to > 0 {
		args = append(args, "-to", time.Duration(to).String())
	} else {
		to = math.MaxInt64 / 2
	}
	code, _, stderr := runCmd(args...)
	require.Equal(t, 0, code, stderr)
	want, wantFlows := window(t, path, from, to)
	got, gotFlows := window(t, out, from, to)
	if rounded {
		times := regexp.MustCompile(` \[\d+ \+\d+\]`)
		for _, s := range []*[]string{&want, &got} {
			for i := range *s {
				(*s)[i] = times.ReplaceAllString((*s)[i], "")
			}
			slices.Sort(*s)
		}
	}
	assert.Equal(t, want, got, "slices of [%d, %d] (%s)", from, to, path)
	if kept {
		for _, f := range wantFlows {
			assert.Contains(t, gotFlows, f, "an arrow of the window lost (%s)", path)
		}
		return
	}
	assert.Equal(t, wantFlows, gotFlows, "flows of [%d, %d] (%s)", from, to, path)
}

// TestCutAgainstPerfetto cuts random windows out of random traces of
// several shapes (the tracer package's end order, B/E pairs, start
// order, zero-length slices, slices that start or end with their parent,
// several processes, instants) and compares with trace_processor.
func TestCutAgainstPerfetto(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"tracer", "tracer cut", "start order", "zero", "flush", "flush start", "recursion", "merged", "instants"} {
		for seed := range quickOr[uint64](2, 3) {
			t.Run(fmt.Sprintf("%s/%d", name, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 7))
				text, spans := genTrace(r, statsShapes[name])
				path := writeFile(t, dir, fmt.Sprintf("%s-%d.json", name, seed), text)
				var end int64
				for _, s := range spans {
					end = max(end, s.end)
				}
				// A window at span edges (ties there) or anywhere.
				at := func() int64 {
					if r.IntN(2) == 0 {
						s := spans[r.IntN(len(spans))]
						return []int64{s.start, s.end}[r.IntN(2)]
					}
					return r.Int64N(end + 1)
				}
				a, b := at(), at()
				if a > b {
					a, b = b, a
				}
				if a == b {
					b = a + 1
				}
				t.Logf("seed %d, window [%d, %d]", seed, a, b)
				compareCut(t, path, a, b)
			})
		}
	}
}

// TestCutOtherTools cuts traces written the ways other tools write them
// and compares with trace_processor: CMake's and Python's spaces after
// colons, Node.js's "dur":0 on B and E, flows on B/E slices and from a
// slice before the window, spans nested across both edges.
func TestCutOtherTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"spaces": `[
{"name": "configure", "ph": "B", "ts": 100, "pid": 1, "tid": 1},
{"name": "step", "ph": "B", "ts": 150, "pid": 1, "tid": 1},
{"name": "step", "ph": "E", "ts": 300, "pid": 1, "tid": 1},
{"name": "configure", "ph": "E", "ts": 900, "pid": 1, "tid": 1}
]`,
		"node": `{"traceEvents":[
{"pid":1,"tid":1,"ts":100,"dur":0,"ph":"B","cat":"node","name":"outer","args":{}},
{"pid":1,"tid":1,"ts":200,"dur":0,"ph":"B","cat":"node","name":"inner","args":{}},
{"pid":1,"tid":1,"ts":700,"dur":0,"ph":"E","cat":"node","name":"inner","args":{}},
{"pid":1,"tid":1,"ts":800,"dur":0,"ph":"E","cat":"node","name":"outer","args":{}}
]}`,
		"flows on B/E": `[
{"name":"send","ph":"B","ts":100,"pid":1,"tid":1},
{"name":"f","cat":"c","ph":"s","id":1,"ts":150,"pid":1,"tid":1},
{"name":"send","ph":"E","ts":300,"pid":1,"tid":1},
{"name":"recv","ph":"B","ts":400,"pid":1,"tid":2},
{"name":"f","cat":"c","ph":"f","bp":"e","id":1,"ts":450,"pid":1,"tid":2},
{"name":"recv","ph":"E","ts":900,"pid":1,"tid":2},
{"name":"g","cat":"c","ph":"s","id":2,"ts":400,"pid":1,"tid":2},
{"name":"work","ph":"X","ts":500,"dur":100,"pid":1,"tid":3},
{"name":"g","cat":"c","ph":"f","bp":"e","id":2,"ts":550,"pid":1,"tid":3}
]`,
		"nested across": `[
{"name":"c","ph":"X","ts":200,"dur":600,"pid":1,"tid":1},
{"name":"b","ph":"X","ts":150,"dur":700,"pid":1,"tid":1},
{"name":"a","ph":"X","ts":100,"dur":800,"pid":1,"tid":1},
{"name":"o","ph":"B","ts":100,"pid":1,"tid":2},
{"name":"p","ph":"B","ts":110,"pid":1,"tid":2},
{"name":"x","ph":"X","ts":120,"dur":700,"pid":1,"tid":2},
{"name":"p","ph":"E","ts":850,"pid":1,"tid":2},
{"name":"o","ph":"E","ts":860,"pid":1,"tid":2}
]`,
	}
	for name, text := range files {
		path := writeFile(t, dir, strings.ReplaceAll(name, "/", "-")+".json", text)
		for _, w := range [][2]int64{{0, 0}, {250_000, 600_000}, {420_000, 0}, {300_000, 301_000}} {
			t.Run(fmt.Sprintf("%s/%d-%d", name, w[0], w[1]), func(t *testing.T) {
				compareCut(t, path, w[0], w[1])
			})
		}
	}
}

// TestCutPastTheEnd: a window that starts after the trace's last event
// is an error, not an empty trace.
func TestCutPastTheEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, dir, "t.json", "[\n"+ev+"\n]\n")
	out := filepath.Join(dir, "out.json")
	code, _, stderr := runCmd("cut", "-from", "1h", "-o", out, path)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "after the trace's last time")
	assert.NoFileExists(t, out)
}
