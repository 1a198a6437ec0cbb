package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gotracer/tracer/cmd/tracer/internal/tables"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// perfettoNames asks trace_processor, per span name of the thread
// slices, the count, total and self time (duration less the direct
// children's) and the deepest depth of the slices that ended.
const perfettoNames = `select s.name as name, count(*) as n, sum(s.dur) as total,
  sum(s.dur - coalesce((select sum(c.dur) from slice c where c.parent_id = s.id and c.dur >= 0), 0)) as self,
  max(s.depth) as depth
from slice s join thread_track tt on s.track_id = tt.id
where s.dur >= 0 group by s.name;`

// perfettoTracks asks trace_processor, per thread, its slices and its
// busy time: the duration of its top-level slices.
const perfettoTracks = `select p.pid as pid, t.tid as tid, count(*) as n,
  sum(case when s.depth = 0 then s.dur else 0 end) as busy
from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid)
  left join process p using (upid)
where s.dur >= 0 group by t.utid;`

func abs(n int64) int64 { return max(n, -n) }

// statsShapes are the kinds of traces the differential test makes.
var statsShapes = map[string]shape{
	"tracer":          {order: "end", pids: 1, tids: 4, depth: 5, fanout: 4},
	"tracer cut":      {order: "end", cut: 0.3, pids: 1, tids: 3, depth: 5, fanout: 4},
	"start order":     {order: "start", pids: 1, tids: 3, depth: 5, fanout: 4},
	"shuffled X":      {order: "shuffle", pids: 1, tids: 3, depth: 5, fanout: 4},
	"shuffled and BE": {order: "shuffle", cut: 0.3, pids: 1, tids: 2, depth: 5, fanout: 4},
	"zero":            {order: "end", zero: 0.3, pids: 1, tids: 2, depth: 5, fanout: 4},
	"flush":           {order: "end", flush: 0.5, pids: 1, tids: 2, depth: 5, fanout: 4},
	"flush start":     {order: "start", flush: 0.5, pids: 1, tids: 2, depth: 5, fanout: 4},
	"recursion":       {order: "end", recurse: 0.7, pids: 1, tids: 2, depth: 8, fanout: 3},
	"everything":      {order: "shuffle", cut: 0.3, zero: 0.2, flush: 0.4, recurse: 0.5, pids: 3, tids: 3, depth: 6, fanout: 4, async: true},
	// More slices than a track keeps apart: the older are folded.
	"folded": {order: "end", cut: 0.1, pids: 1, tids: 1, depth: 4, fanout: 800, short: true},
	// More top slices than maxStack: the children of a span that ends
	// later (in end order), kept apart.
	"wide":         {order: "end", cut: 0.1, pids: 1, tids: 1, depth: 3, fanout: 6000, short: true},
	"folded start": {order: "start", pids: 1, tids: 1, depth: 3, fanout: 6000, short: true},
	"merged":       {order: "end", cut: 0.2, zero: 0.1, flush: 0.3, recurse: 0.3, pids: 4, tids: 2, depth: 5, fanout: 3, async: true, instants: true},
	"instants":     {order: "end", zero: 0.2, flush: 0.4, pids: 1, tids: 2, depth: 4, fanout: 3, instants: true},
	// Deeper than the 512 levels Perfetto keeps: it drops the slices
	// below, and an E whose B it dropped ends another B of its name.
	"deep recursion":  {order: "end", cut: 0.3, pids: 1, tids: 2, depth: 3, fanout: 3, chain: 600},
	"deep start":      {order: "start", cut: 0.5, pids: 1, tids: 1, depth: 3, fanout: 3, chain: 530},
	"deep shuffled X": {order: "shuffle", recurse: 0.5, pids: 1, tids: 2, depth: 3, fanout: 3, chain: 513},
	// B and E events at one ts with others, in any order: Perfetto's
	// sorter takes an E first, once the file has had an X.
	"ties":          {order: "end", ties: true, cut: 0.5, flush: 0.5, zero: 0.2, recurse: 0.3, pids: 1, tids: 3, depth: 5, fanout: 4},
	"ties start":    {order: "start", ties: true, cut: 0.7, flush: 0.6, zero: 0.2, pids: 2, tids: 2, depth: 5, fanout: 3},
	"ties shuffled": {order: "shuffle", ties: true, cut: 0.5, flush: 0.5, zero: 0.3, recurse: 0.5, pids: 1, tids: 2, depth: 6, fanout: 3},
}

// TestStatsAgainstPerfetto compares what stats says of span names and
// tracks with what trace_processor's slice table holds, on random traces
// of every shape.
func TestStatsAgainstPerfetto(t *testing.T) {
	t.Parallel()
	compareShapes(t, quickOr[uint64](2, 4))
}

// compareShapes compares stats with trace_processor on seeds random
// traces of every shape.
func compareShapes(t *testing.T, seeds uint64) {
	dir := t.TempDir()
	for name, sh := range statsShapes {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/%d", name, seed), func(t *testing.T) {
				text, _ := genTrace(rand.New(rand.NewPCG(seed, 1)), sh)
				path := writeFile(t, dir, fmt.Sprintf("%s-%d.json", name, seed), text)
				want := comparePerfetto(t, path)
				// The slice table of tracer sql and export: the same
				// deepest depths, but where it wrote slices before one
				// that encloses them came (X events in no order after
				// B/E pairs), which it reports, their depths short; and
				// where B and E events tie with others, which it takes
				// in the file's order (docs/analysis.md).
				have, unsure := tableDepths(t, path)
				switch {
				case sh.ties:
				case unsure > 0:
					require.Len(t, have, len(want))
					for name, d := range have {
						assert.LessOrEqual(t, d, want[name], "the slice table's deepest depth of %q, %d slices written short", name, unsure)
					}
				default:
					assert.Equal(t, want, have, "the slice table's deepest depth per name (tracer sql, export)")
				}
			})
		}
	}
}

// comparePerfetto checks stats on the trace at path against
// trace_processor, and returns trace_processor's deepest depth per name.
func comparePerfetto(t *testing.T, path string) map[string]int64 {
	t.Helper()
	return compareStats(t, path, 0, false)
}

// compareStats checks stats on the trace at path against trace_processor:
// durations within tolerance ns a slice (trace_processor rounds the
// absolute microseconds of some tools to 256 ns), and, if open, with the
// slices trace_processor leaves unfinished (dur -1: B events never ended,
// as in a file cut by a crash) counted as stats counts them, to the end
// of the trace. It returns trace_processor's deepest depth per name.
func compareStats(t *testing.T, path string, tolerance int64, open bool) map[string]int64 {
	t.Helper()
	got, err := computeStats(path, true)
	require.NoError(t, err)
	perfettoNames, perfettoTracks := perfettoNames, perfettoTracks
	if open {
		for _, q := range []*string{&perfettoNames, &perfettoTracks} {
			for _, x := range []string{"s", "c"} {
				*q = strings.ReplaceAll(*q, x+".dur >= 0", "1")
				*q = strings.ReplaceAll(*q, x+".dur", fmt.Sprintf("(case when %[1]s.dur < 0 then %[2]d - %[1]s.ts else %[1]s.dur end)", x, got.End))
			}
		}
	}
	near := func(w, h [4]int64) bool {
		return w[0] == h[0] && abs(w[1]-h[1]) <= tolerance*w[0] && abs(w[2]-h[2]) <= 2*tolerance*w[0] && w[3] == h[3]
	}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, s)
		return n
	}
	// One run of trace_processor for both questions: its start costs more
	// than the queries.
	both := `select 'name' as kind, name, n, total, self, depth, 0 as busy from (` + strings.TrimSuffix(perfettoNames, ";") +
		`) union all select 'track', '', n, 0, 0, 0, busy from (` + strings.TrimSuffix(perfettoTracks, ";") + `);`
	want := map[string][4]int64{}
	var wantTracks [][2]int64
	for _, row := range tracecheck.Query(t, path, both) {
		if row["kind"] == "name" {
			want[row["name"]] = [4]int64{num(row["n"]), num(row["total"]), num(row["self"]), num(row["depth"])}
		} else {
			wantTracks = append(wantTracks, [2]int64{num(row["n"]), num(row["busy"])})
		}
	}
	have := map[string][4]int64{}
	for _, s := range got.Spans {
		have[s.Name] = [4]int64{s.Count, s.Total, s.Self, int64(s.MaxDepth)}
	}
	if tolerance > 0 {
		for name, w := range want {
			if h, ok := have[name]; ok && near(w, h) {
				have[name] = w
			}
		}
	}
	assert.Equal(t, want, have, "per name: count, total, self, deepest depth (%s)", path)
	// Tracks by their numbers: Perfetto shows a pid or tid of its own
	// for some (a string hashed, tid 0 as the pid, a negative pid as 0).
	var haveTracks [][2]int64
	for _, tr := range got.Tracks {
		haveTracks = append(haveTracks, [2]int64{tr.Slices, tr.Busy})
	}
	order := func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }
	slices.SortFunc(wantTracks, order)
	slices.SortFunc(haveTracks, order)
	if tolerance > 0 && len(wantTracks) == len(haveTracks) {
		for i := range wantTracks {
			if w, h := wantTracks[i], haveTracks[i]; w[0] == h[0] && abs(w[1]-h[1]) <= tolerance*w[0] {
				haveTracks[i] = w
			}
		}
	}
	assert.Equal(t, wantTracks, haveTracks, "per track: slices, busy (%s)", path)
	depths := map[string]int64{}
	for name, w := range want {
		depths[name] = w[3]
	}
	return depths
}

// tableDepths returns the deepest depth per name of the thread slices
// that ended in the slice table that tracer sql and tracer export make
// of the file at path.
func tableDepths(t *testing.T, path string) (depths map[string]int64, unsure int64) {
	t.Helper()
	r := &sliceRows{depths: map[string]int64{}}
	b := tables.NewBuilder(r)
	require.NoError(t, b.Build([]string{path}, nil))
	return r.depths, b.Report.Unsure
}

// sliceRows is a tables.Sink that keeps the deepest depth per name of
// the thread slices that ended.
type sliceRows struct{ depths map[string]int64 }

func (r *sliceRows) Slice(s *tables.Slice) error {
	if s.Utid != nil && s.Dur >= 0 {
		if d, ok := r.depths[s.Name]; !ok || int64(s.Depth) > d {
			r.depths[s.Name] = int64(s.Depth)
		}
	}
	return nil
}
func (r *sliceRows) Counter(*tables.Counter) error { return nil }
func (r *sliceRows) Flow(*tables.Flow) error       { return nil }
func (r *sliceRows) Track(*tables.Track) error     { return nil }
func (r *sliceRows) Thread(*tables.Thread) error   { return nil }
func (r *sliceRows) Process(*tables.Process) error { return nil }

// TestStatsCorpusAgainstPerfetto compares stats with trace_processor on
// the files of other tools' making that Perfetto loads.
func TestStatsCorpusAgainstPerfetto(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(corpusDir, "verdicts.json"))
	require.NoError(t, err)
	var verdicts map[string]verdict
	require.NoError(t, json.Unmarshal(data, &verdicts))
	for i, name := range slices.Sorted(maps.Keys(verdicts)) {
		if v := verdicts[name]; !sampled(i) || v.Perfetto == "refuses the file" || v.Perfetto == "shows nothing" {
			continue
		}
		t.Run(name, func(t *testing.T) { comparePerfetto(t, filepath.Join(corpusDir, name)) })
	}
}

// TestStatsReplayAgainstPerfetto replays every track of the traces of
// every shape as stats replays those nested deeper than Perfetto keeps
// (internal/trace/exact.go), and compares with trace_processor: the
// replay follows Perfetto on every shape, not only deep ones.
func TestStatsReplayAgainstPerfetto(t *testing.T) {
	replayAll = true
	defer func() { replayAll = false }()
	compareShapes(t, quickOr[uint64](1, 2))
}

// TestStatsTiesAgainstPerfetto compares stats with trace_processor on
// files where a B comes before an E of the same ts: Perfetto's sorter
// keeps the file's order there, unless the file has an X and an event
// out of order at or before that ts (anywhere after, a metadata event
// without ts, which counts as 0, included): then it takes the E first.
func TestStatsTiesAgainstPerfetto(t *testing.T) {
	t.Parallel()
	const tie = `{"name":"x","ph":"B","ts":5,"pid":1,"tid":1},
{"name":"y","ph":"B","ts":10,"pid":1,"tid":1},
{"name":"x","ph":"E","ts":10,"pid":1,"tid":1},
{"name":"y","ph":"E","ts":20,"pid":1,"tid":1}`
	dir := t.TempDir()
	for name, text := range map[string]string{
		"no X":               tie,
		"X first":            `{"name":"z","ph":"X","ts":1,"dur":1,"pid":1,"tid":2},` + tie,
		"X last":             tie + `,{"name":"z","ph":"X","ts":30,"dur":1,"pid":1,"tid":2}`,
		"X last, out early":  tie + `,{"name":"z","ph":"X","ts":30,"dur":1,"pid":1,"tid":2},{"name":"z","ph":"X","ts":7,"dur":1,"pid":1,"tid":2}`,
		"X last, out late":   tie + `,{"name":"z","ph":"X","ts":30,"dur":1,"pid":1,"tid":2},{"name":"z","ph":"X","ts":12,"dur":1,"pid":1,"tid":2}`,
		"X last, metadata":   tie + `,{"name":"z","ph":"X","ts":30,"dur":1,"pid":1,"tid":2},{"name":"thread_name","ph":"M","pid":1,"tid":3,"args":{"name":"t"}}`,
		"counter at the tie": tie + `,{"name":"z","ph":"X","ts":30,"dur":1,"pid":1,"tid":2},{"name":"c","ph":"C","ts":10,"pid":1,"args":{"v":1}}`,
	} {
		t.Run(name, func(t *testing.T) {
			comparePerfetto(t, writeFile(t, dir, "t.json", "[\n"+text+"\n]\n"))
		})
	}
}

// TestStatsOverlapAgainstPerfetto compares stats with trace_processor
// on X events that overlap the slice they begin in: Perfetto moves each
// to the first overflow track of its thread where it does not overlap
// (a new one if none), and nests in it the slices that begin inside it
// there.
func TestStatsOverlapAgainstPerfetto(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"one": `{"name":"A","ph":"X","ts":10,"dur":10,"pid":1,"tid":1},
{"name":"B","ph":"X","ts":15,"dur":10,"pid":1,"tid":1},
{"name":"C","ph":"X","ts":16,"dur":1,"pid":1,"tid":1},
{"name":"D","ph":"X","ts":21,"dur":1,"pid":1,"tid":1}`,
		"nested in the moved one": `{"name":"A","ph":"X","ts":10,"dur":10,"pid":1,"tid":1},
{"name":"B","ph":"X","ts":15,"dur":10,"pid":1,"tid":1},
{"name":"H","ph":"X","ts":19,"dur":5,"pid":1,"tid":1},
{"name":"I","ph":"X","ts":30,"dur":10,"pid":1,"tid":1},
{"name":"J","ph":"X","ts":35,"dur":10,"pid":1,"tid":1}`,
		"three tracks, in end order": `{"name":"C","ph":"X","ts":16,"dur":1,"pid":1,"tid":1},
{"name":"A","ph":"X","ts":10,"dur":10,"pid":1,"tid":1},
{"name":"H","ph":"X","ts":19,"dur":5,"pid":1,"tid":1},
{"name":"B","ph":"X","ts":15,"dur":10,"pid":1,"tid":1},
{"name":"E","ph":"X","ts":16.5,"dur":10,"pid":1,"tid":1},
{"name":"F","ph":"X","ts":17,"dur":10,"pid":1,"tid":1},
{"name":"G","ph":"X","ts":18,"dur":2,"pid":1,"tid":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			comparePerfetto(t, writeFile(t, dir, "t.json", "[\n"+text+"\n]\n"))
		})
	}
}

// TestStatsTangledAgainstPerfetto compares stats with trace_processor on
// the ways of Perfetto's slice tracker that a stream cannot follow,
// which stats replays (internal/trace/exact.go).
func TestStatsTangledAgainstPerfetto(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, text := range map[string]string{
		// y@3, cut at 4 by the E of x, is gone when the E of y comes:
		// that E ends y@1, and the last ends nothing.
		"a cut B is gone": `{"name":"y","ph":"B","ts":1,"pid":1,"tid":1},
{"name":"x","ph":"B","ts":2,"pid":1,"tid":1},
{"name":"y","ph":"B","ts":3,"pid":1,"tid":1},
{"name":"x","ph":"E","ts":4,"pid":1,"tid":1},
{"name":"y","ph":"E","ts":6,"pid":1,"tid":1},
{"name":"y","ph":"E","ts":10,"pid":1,"tid":1}`,
		// x begins while b is open: it is b's child, though it ends
		// after b.
		"an X in an open B": `{"name":"b","ph":"B","ts":0,"pid":1,"tid":1},
{"name":"b","ph":"E","ts":5,"pid":1,"tid":1},
{"name":"x","ph":"X","ts":2,"dur":6,"pid":1,"tid":1}`,
		// y, open inside o at its end, is cut there when time moves
		// on; z, which begins at that end, begins inside y, and is cut
		// with it.
		"a slice where a B was cut": `{"name":"o","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},
{"name":"y","ph":"B","ts":5,"pid":1,"tid":1},
{"name":"z","ph":"X","ts":10,"dur":2,"pid":1,"tid":1},
{"name":"w","ph":"X","ts":11,"dur":3,"pid":1,"tid":1},
{"name":"y","ph":"E","ts":15,"pid":1,"tid":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			comparePerfetto(t, writeFile(t, dir, "t.json", "[\n"+text+"\n]\n"))
		})
	}
}
