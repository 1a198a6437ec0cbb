package tables

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/internal/tracecheck"
)

// TestOverlapDiffersFromTraceProcessor pins down what the tables do
// differently from trace_processor with X slices of one thread that
// overlap without nesting (docs/analysis.md): trace_processor moves the
// later to an overflow track of the thread (type
// thread_overlapping_slice), at depth 0 there, and nests in the earlier
// the slices that begin inside both; the tables keep the later on the
// thread's track at depth 0, beside the earlier, and nest in it every
// slice that begins inside it. The slices themselves (ts, dur, name)
// are the same; only those rows differ, in depth and parent.
func TestOverlapDiffersFromTraceProcessor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overlap.json")
	require.NoError(t, os.WriteFile(path, []byte(`[
{"name":"A","ph":"X","ts":10,"dur":10,"pid":1,"tid":1},
{"name":"B","ph":"X","ts":15,"dur":10,"pid":1,"tid":1},
{"name":"C","ph":"X","ts":16,"dur":1,"pid":1,"tid":1},
{"name":"D","ph":"X","ts":21,"dur":1,"pid":1,"tid":1},
{"name":"E","ph":"X","ts":30,"dur":10,"pid":1,"tid":1},
{"name":"F","ph":"X","ts":31,"dur":1,"pid":1,"tid":1}
]`), 0o644))
	want := tracecheck.PerfettoSQL(t, path, sliceQuery)[1:]
	r, _ := build(t, 0, path)
	got := sliceKeys(r)

	only := func(a, b [][]string) [][]string {
		var out [][]string
		for _, row := range a {
			if !slices.ContainsFunc(b, func(o []string) bool { return slices.Equal(o, row) }) {
				out = append(out, row)
			}
		}
		return out
	}
	// ts, dur, name, depth, parent's name and ts (ns).
	assert.Equal(t, [][]string{
		{"16000", "1000", "C", "1", "A", "10000"},
		{"21000", "1000", "D", "0", "", "-1"},
	}, only(want, got), "trace_processor's rows that the tables do not have")
	assert.Equal(t, [][]string{
		{"16000", "1000", "C", "1", "B", "15000"},
		{"21000", "1000", "D", "1", "B", "15000"},
	}, only(got, want), "the tables' rows that trace_processor does not have")

	key := func(rows [][]string) []string {
		var out []string
		for _, r := range rows {
			out = append(out, strings.Join(r[:3], " "))
		}
		slices.Sort(out)
		return out
	}
	assert.Equal(t, key(want), key(got), "the same slices")

	// B is on an overflow track of the thread in trace_processor, on
	// the thread's track here.
	tracks := tracecheck.PerfettoSQL(t, path, `SELECT s.name, t.type FROM slice s JOIN track t ON t.id = s.track_id WHERE s.name = 'B';`)
	require.Equal(t, [][]string{{"name", "type"}, {"B", "thread_overlapping_slice"}}, tracks)
	for _, s := range r.slices {
		if s.Name == "B" {
			for _, tr := range r.tracks {
				if tr.ID == s.TrackID {
					assert.Equal(t, "thread", tr.Type)
				}
			}
		}
	}
}

// TestEndAsTraceProcessor: an E that does not end the innermost open B
// ends the innermost open B of its name, and cuts the B events open
// inside it there (misplaced_end_event), as trace_processor does.
func TestEndAsTraceProcessor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ends.json")
	require.NoError(t, os.WriteFile(path, []byte(`[
{"name":"x","ph":"B","ts":5,"pid":1,"tid":1},
{"name":"y","ph":"B","ts":10,"pid":1,"tid":1},
{"name":"x","ph":"E","ts":12,"pid":1,"tid":1},
{"name":"y","ph":"E","ts":20,"pid":1,"tid":1}
]`), 0o644))
	want := tracecheck.PerfettoSQL(t, path, sliceQuery)[1:]
	r, _ := build(t, 0, path)
	// ts, dur, name, depth, parent's name and ts (ns).
	assert.Equal(t, [][]string{
		{"5000", "7000", "x", "0", "", "-1"},
		{"10000", "2000", "y", "1", "x", "5000"},
	}, want, "trace_processor: the E of x ends x, and cuts y there")
	assert.Equal(t, want, sliceKeys(r))
}
