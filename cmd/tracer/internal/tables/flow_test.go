package tables

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/internal/tracecheck"
)

// perfettoArrows returns trace_processor's arrows of the trace at path,
// each by its two slices' names and times (ids differ), sorted as arrows
// sorts the tables'.
func perfettoArrows(t *testing.T, path string) [][]string {
	t.Helper()
	want := tracecheck.PerfettoSQL(t, path, `SELECT o.name, o.ts, i.name, i.ts FROM flow f
JOIN slice o ON o.id = f.slice_out JOIN slice i ON i.id = f.slice_in`)[1:]
	slices.SortFunc(want, slices.Compare)
	return want
}

// TestBindFlowsMatchTraceProcessor checks the arrows of the second form
// of flows (bind_id with flow_in and flow_out on slices) against
// trace_processor's flow table: on a file of every case by hand, and
// on random files of slices of several threads and processes, written
// in no order, with ties in ts.
func TestBindFlowsMatchTraceProcessor(t *testing.T) {
	dir := t.TempDir()
	hand := filepath.Join(dir, "hand.json")
	require.NoError(t, os.WriteFile(hand, []byte(`[
{"name":"server","ph":"X","ts":20,"dur":5,"pid":2,"tid":2,"bind_id":"0x10","flow_in":true},
{"name":"client","ph":"X","ts":10,"dur":30,"pid":1,"tid":1,"bind_id":"0x10","flow_out":true},
{"name":"hop","ph":"B","ts":50,"pid":3,"tid":3,"bind_id":16,"flow_in":true,"flow_out":true},
{"name":"hop","ph":"E","ts":55,"pid":3,"tid":3},
{"name":"last","ph":"X","ts":60,"dur":1,"pid":1,"tid":1,"bind_id":"10","flow_in":true},
{"name":"early","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"step first","ph":"X","ts":2,"dur":0.5,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true,"flow_out":true},
{"name":"late","ph":"X","ts":3,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_out":true},
{"name":"dup","ph":"X","ts":4,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_out":true},
{"name":"in2","ph":"X","ts":6,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"in3","ph":"X","ts":7,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"instant","ph":"i","ts":8,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"neither","ph":"X","ts":9,"dur":0.5,"pid":1,"tid":1,"bind_id":"0x20"},
{"name":"string","ph":"X","ts":70,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_in":"true"},
{"name":"number","ph":"X","ts":71,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_in":1},
{"name":"in args","ph":"X","ts":72,"dur":1,"pid":1,"tid":1,"args":{"bind_id":"0x20","flow_in":true}},
{"name":"op","cat":"c","ph":"b","id":"0x1","ts":73,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"op","cat":"c","ph":"e","id":"0x1","ts":74,"pid":1,"tid":1},
{"name":"mark","cat":"c","ph":"n","id":"0x1","ts":75,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"tie short","ph":"X","ts":80,"dur":1,"pid":5,"tid":5,"bind_id":"0x30","flow_out":true},
{"name":"tie long","ph":"X","ts":80,"dur":5,"pid":4,"tid":4,"bind_id":"0x30","flow_in":true},
{"name":"tie B","ph":"B","ts":80,"pid":6,"tid":6,"bind_id":"0x30","flow_in":true},
{"name":"tie B","ph":"E","ts":81,"pid":6,"tid":6}
]`), 0o644))
	paths := []string{hand}
	for seed := range uint64(10) {
		paths = append(paths, writeBindTrace(t, dir, seed))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := perfettoArrows(t, path)
			r, _ := build(t, 0, path)
			require.NotEmpty(t, want)
			require.Equal(t, want, arrows(r))
		})
	}
}

// writeBindTrace writes a random trace of slices that carry bind ids,
// X events in no order.
func writeBindTrace(t *testing.T, dir string, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 7))
	var xs, bes []string
	n := 0
	bind := func() string {
		if r.IntN(2) == 0 {
			return ""
		}
		id := fmt.Sprint(1 + r.IntN(5))
		if r.IntN(2) == 0 {
			id = fmt.Sprintf(`"0x%x"`, 1+r.IntN(5))
		}
		dir := []string{`"flow_out":true`, `"flow_in":true`, `"flow_in":true,"flow_out":true`, `"flow_out":false`}[r.IntN(4)]
		return `,"bind_id":` + id + "," + dir
	}
	for pid := 1; pid <= 3; pid++ {
		for tid := 1; tid <= 2; tid++ {
			ts := int64(r.IntN(5))
			for range 10 + r.IntN(10) {
				d := int64(1 + r.IntN(6))
				n++
				if tid == 2 && r.IntN(2) == 0 {
					bes = append(bes,
						fmt.Sprintf(`{"name":"s%d","ph":"B","ts":%d,"pid":%d,"tid":%d%s}`, n, ts, pid, tid, bind()),
						fmt.Sprintf(`{"name":"s%d","ph":"E","ts":%d,"pid":%d,"tid":%d}`, n, ts+d, pid, tid))
					ts += d + 1
					continue
				}
				xs = append(xs, fmt.Sprintf(`{"name":"s%d","ph":"X","ts":%d,"dur":%d,"pid":%d,"tid":%d%s}`, n, ts, d, pid, tid, bind()))
				if r.IntN(3) == 0 {
					// A child, which starts with its parent at times.
					n++
					c := ts + int64(r.IntN(2))
					xs = append(xs, fmt.Sprintf(`{"name":"s%d","ph":"X","ts":%d,"dur":%d,"pid":%d,"tid":%d%s}`, n, c, ts+d-c, pid, tid, bind()))
				}
				ts += d + int64(r.IntN(2))
			}
		}
	}
	r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	path := filepath.Join(dir, fmt.Sprintf("random-%d.json", seed))
	require.NoError(t, os.WriteFile(path, []byte("[\n"+strings.Join(append(xs, bes...), ",\n")+"\n]\n"), 0o644))
	return path
}

// TestFlowEventsMatchTraceProcessor checks the arrows of flow events
// (s, t, f) against trace_processor's flow table: by hand, the shapes
// where its arrows are not a chain in file order (an f in a slice begun
// before the s's, two f events of one flow, an id started again after
// its f, events written out of time order), ties at one ts, and random
// files of nested X and B/E slices on three threads (sharing edges,
// with instants and X events of no duration, in half of them) with
// flow events of a few ids, reused, at their time (before, after or
// among the slice events of their ts), all at the end or in no order;
// and the slices of each file (depth and parent) as well.
func TestFlowEventsMatchTraceProcessor(t *testing.T) {
	dir := t.TempDir()
	x := func(name string, ts, dur, tid int) string {
		return fmt.Sprintf(`{"name":%q,"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d}`, name, ts, dur, tid)
	}
	b := func(name string, ts, tid int) string {
		return fmt.Sprintf(`{"name":%q,"ph":"B","ts":%d,"pid":1,"tid":%d}`, name, ts, tid)
	}
	e := func(name string, ts, tid int) string {
		return fmt.Sprintf(`{"name":%q,"ph":"E","ts":%d,"pid":1,"tid":%d}`, name, ts, tid)
	}
	fl := func(ph string, ts, tid int) string {
		bp := ""
		if ph == "f" {
			bp = `"bp":"e",`
		}
		if ph == "fn" {
			ph = "f" // binds to the next slice
		}
		return fmt.Sprintf(`{"name":"fl","cat":"c","ph":%q,%s"id":1,"ts":%d,"pid":1,"tid":%d}`, ph, bp, ts, tid)
	}
	fl2 := func(ph string, ts, tid int) string { // another flow
		return strings.Replace(fl(ph, ts, tid), `"id":1`, `"id":2`, 1)
	}
	for _, c := range []struct {
		name string
		evs  []string
	}{
		{"backwards", []string{x("p", 0, 100, 1), x("q", 0, 100, 2), x("a", 10, 10, 1), fl("s", 15, 1), fl("f", 30, 2)}},
		{"same start", []string{x("a", 10, 5, 1), fl("s", 12, 1), x("b", 10, 5, 2), fl("f", 12, 2)}},
		{"two ends", []string{x("a", 10, 5, 1), fl("s", 12, 1), x("b", 20, 5, 2), fl("f", 22, 2), x("c", 30, 5, 3), fl("f", 32, 3)}},
		{"step after end", []string{x("a", 10, 5, 1), fl("s", 12, 1), x("b", 20, 5, 2), fl("t", 22, 2), x("c", 30, 5, 3), fl("f", 32, 3), x("d", 40, 5, 1), fl("t", 42, 1)}},
		{"started again", []string{x("a", 10, 5, 1), fl("s", 12, 1), x("b", 20, 5, 2), fl("f", 22, 2), x("c", 30, 5, 1), fl("s", 32, 1), x("d", 40, 5, 2), fl("f", 42, 2)}},
		{"step written first", []string{x("b", 20, 5, 2), fl("t", 22, 2), x("a", 10, 5, 1), fl("s", 12, 1), x("c", 30, 5, 3), fl("f", 32, 3)}},
		{"next backwards", []string{x("w", 0, 100, 2), x("a", 10, 5, 1), fl("s", 12, 1), x("b", 30, 5, 2), fl("fn", 20, 2)}},
		{"unbound start", []string{fl("s", 5, 1), x("a", 10, 5, 1), fl("s", 12, 1), x("b", 20, 5, 2), fl("f", 22, 2)}},
		// A flow event at an E: file order in a file with no X before,
		// the E first in one with.
		{"s then E", []string{b("p", 0, 1), b("q", 0, 2), b("a", 10, 1), fl("s", 20, 1), e("a", 20, 1), fl("f", 30, 2), e("q", 100, 2), e("p", 100, 1)}},
		{"E then s", []string{b("p", 0, 1), b("q", 0, 2), b("a", 10, 1), e("a", 20, 1), fl("s", 20, 1), fl("f", 30, 2), e("q", 100, 2), e("p", 100, 1)}},
		{"X, s then E", []string{x("z", 0, 1, 9), b("p", 0, 1), b("q", 0, 2), b("a", 10, 1), fl("s", 20, 1), e("a", 20, 1), fl("f", 30, 2), e("q", 100, 2), e("p", 100, 1)}},
		{"s then E, a root", []string{b("q", 0, 2), b("a", 10, 1), fl("s", 20, 1), e("a", 20, 1), fl("f", 30, 2), e("q", 100, 2)}},
		// An f to the next slice is taken as that slice begins, before
		// a t of its ts.
		{"next then a step at its slice's ts", []string{x("a", 0, 5, 1), fl("s", 1, 1), x("c", 15, 10, 3), fl("fn", 10, 2), x("b", 20, 5, 2), fl("t", 20, 3)}},
		// With InOpen, c is written in the B events open: the s, read
		// before a began, binds to p.
		{"s then B, written in it", []string{b("p", 0, 1), x("q", 0, 100, 2), fl("s", 10, 1), b("a", 10, 1), x("c", 12, 2, 1), x("d", 15, 1, 1), fl("f", 30, 2), e("a", 50, 1), e("p", 60, 1)}},
		{"dropped X, s then E", []string{`{"name":"z","ph":"X","ts":0,"pid":1,"tid":9}`, b("p", 0, 1), b("q", 0, 2), b("a", 10, 1), fl("s", 20, 1), e("a", 20, 1), fl("f", 30, 2), e("q", 100, 2), e("p", 100, 1)}},
		// A flow event at a slice's begin: in file order but for an X
		// with a duration, which trace_processor takes first.
		{"s then B", []string{x("p", 0, 100, 1), x("q", 0, 100, 2), fl("s", 10, 1), b("a", 10, 1), e("a", 20, 1), fl("f", 30, 2)}},
		{"B then s", []string{x("p", 0, 100, 1), x("q", 0, 100, 2), b("a", 10, 1), fl("s", 10, 1), e("a", 20, 1), fl("f", 30, 2)}},
		{"s then X", []string{x("p", 0, 100, 1), x("q", 0, 100, 2), fl("s", 10, 1), x("a", 10, 5, 1), fl("f", 30, 2)}},
		{"s then X of no dur", []string{x("p", 0, 100, 1), x("q", 0, 100, 2), fl("s", 10, 1), x("a", 10, 0, 1), fl("f", 30, 2)}},
		{"s then instant", []string{x("p", 0, 100, 1), x("q", 0, 100, 2), fl("s", 10, 1), `{"name":"a","ph":"i","ts":10,"pid":1,"tid":1}`, fl("f", 30, 2)}},
		{"f to the next, then B", []string{x("p", 0, 100, 1), x("q", 0, 100, 2), x("a", 5, 2, 2), fl("s", 6, 2), fl("fn", 10, 1), b("b", 10, 1), e("b", 20, 1), x("c", 30, 5, 1)}},
		// With InOpen, c is written in b, still open: the f, read
		// before b began, binds to b, not to c.
		{"f to the next, then B, written in it", []string{x("q", 0, 100, 2), x("a", 5, 2, 2), fl("s", 6, 2), fl("fn", 10, 1), b("b", 10, 1), x("c", 12, 4, 1), x("c2", 13, 1, 1), x("d", 17, 1, 1), e("b", 20, 1)}},
		// Two flow events between the slice events of their ts: each
		// is before those after it in the file, not all of its ts.
		{"s, E, s, E", []string{b("p", 0, 1), b("q", 0, 2), b("a", 10, 1), fl("s", 20, 1), e("a", 20, 1), fl2("s", 20, 1), e("p", 20, 1), fl("f", 30, 2), fl2("f", 30, 2), e("q", 100, 2)}},
		{"s, B, s, B", []string{x("p", 0, 100, 1), x("q", 0, 100, 2), fl("s", 10, 1), b("a", 10, 1), fl2("s", 10, 1), b("c", 10, 1), e("c", 15, 1), e("a", 20, 1), fl("f", 30, 2), fl2("f", 30, 2)}},
		// With InOpen, c is written in p, still open; the s, read
		// after p ended (not written yet), at p's begin, binds to p.
		{"late s at a B's begin, written in it", []string{x("q", 0, 100, 2), b("p", 10, 1), x("c", 12, 4, 1), x("c2", 13, 1, 1), x("d", 17, 1, 1), e("p", 20, 1), fl("s", 10, 1), fl("f", 30, 2)}},
		// With InOpen, c is written in d, open; w, which holds d, is
		// not written when the s, late, comes before d began.
		{"late s in a B holding one written in", []string{x("q", 0, 100, 2), b("w", 10, 1), b("d", 14, 1), x("c", 16, 4, 1), x("c2", 17, 1, 1), x("e", 22, 1, 1), e("d", 30, 1), e("w", 40, 1), fl("s", 12, 1), fl("f", 50, 2)}},
		// With InOpen, r1 is written in a, open, which m holds; n is
		// written before the s, late, comes in r2.
		{"late s after one written in a B held", []string{x("q", 0, 100, 2), b("n", 10, 1), b("m", 12, 1), b("a", 14, 1), b("r1", 16, 1), e("r1", 20, 1), b("r2", 22, 1), e("r2", 28, 1), e("a", 30, 1), e("m", 35, 1), e("n", 40, 1), b("z", 50, 1), e("z", 51, 1), b("z2", 52, 1), e("z2", 53, 1), fl("s", 25, 1), fl("f", 60, 2)}},
		// Two B/E pairs of one span: the first B is the outer, though
		// its E comes last.
		{"one span, two pairs", []string{x("q", 0, 100, 2), b("p", 10, 1), b("c", 10, 1), fl("s", 12, 1), e("c", 20, 1), e("p", 20, 1), fl("f", 30, 2)}},
		// Slices of no duration at a B's begin: before it in the file,
		// off the stack once it begins; after it, in it.
		{"X of no dur, then B", []string{x("q", 0, 100, 2), x("z", 10, 0, 1), b("p", 10, 1), fl("s", 12, 1), e("p", 20, 1), fl("f", 30, 2)}},
		{"instant, B, instant", []string{x("q", 0, 100, 2), b("a", 10, 1), `{"name":"i","ph":"i","ts":10,"pid":1,"tid":1}`, b("b", 10, 1), `{"name":"j","ph":"i","ts":10,"pid":1,"tid":1}`, fl("s", 11, 1), e("b", 20, 1), e("a", 30, 1), fl("f", 40, 2)}},
		// Of one span, the X begins first, though written after.
		{"B, then X of its span", []string{x("q", 0, 100, 2), b("p", 10, 1), x("c", 10, 10, 1), fl("s", 12, 1), e("p", 20, 1), fl("f", 30, 2)}},
		{"X, s then nested E", []string{x("z", 0, 1, 9), b("p", 0, 1), b("q", 0, 2), b("a", 10, 1), b("c", 15, 1), fl("s", 20, 1), e("c", 20, 1), e("a", 20, 1), fl("f", 30, 2), e("q", 100, 2), e("p", 100, 1)}},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
		require.NoError(t, os.WriteFile(path, []byte("[\n"+strings.Join(c.evs, ",\n")+"\n]\n"), 0o644))
		want := perfettoArrows(t, path)
		require.NotEmpty(t, want, c.name)
		wantSlices := tracecheck.PerfettoSQL(t, path, sliceQuery)[1:]
		for _, inOpen := range []bool{false, true} {
			r, rep := buildInOpen(t, 0, inOpen, path)
			require.Empty(t, rep.Late, c.name)
			require.Equal(t, wantSlices, sliceKeys(r), "%s, InOpen %v: slices", c.name, inOpen)
			require.Equal(t, want, arrows(r), "%s, InOpen %v", c.name, inOpen)
		}
	}

	seed := rand.Uint64()
	if s := os.Getenv("FLOW_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (FLOW_SEED; FLOW_DIR keeps the files)", seed)
	if d := os.Getenv("FLOW_DIR"); d != "" {
		dir = d
	}
	exact := map[string]int{} // files compared, by layout
	for round := range 12 {
		r := rand.New(rand.NewPCG(seed, uint64(round)))
		// A third of the rounds have no X event: trace_processor takes
		// a flow event and an E at one ts in file order there, the E
		// first in the others.
		// Half of them have slices that share a begin or an end.
		slicesEvs, spans := genFlowSlices(r, round%3 == 2, round%4 >= 2)
		flowEvs := genFlowEvents(r, spans)
		byTime := func(flowsFirst bool) []genEvent {
			evs := slices.Concat(slicesEvs, flowEvs)
			if flowsFirst {
				evs = slices.Concat(flowEvs, slicesEvs)
			}
			slices.SortStableFunc(evs, func(a, b genEvent) int { return cmp.Compare(a.ts, b.ts) })
			return evs
		}
		// In time, each flow event at a random place among the slice
		// events of its ts.
		mixed := slices.Clone(slicesEvs)
		slices.SortStableFunc(mixed, func(a, b genEvent) int { return cmp.Compare(a.ts, b.ts) })
		for _, f := range flowEvs {
			lo := sort.Search(len(mixed), func(i int) bool { return mixed[i].ts >= f.ts })
			hi := sort.Search(len(mixed), func(i int) bool { return mixed[i].ts > f.ts })
			mixed = slices.Insert(mixed, lo+r.IntN(hi-lo+1), f)
		}
		shuffled := slices.Clone(flowEvs)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, v := range []struct {
			name string
			evs  []genEvent
		}{
			{"in-time", byTime(false)},
			{"flows-first", byTime(true)},
			{"mixed", mixed},
			{"at-end", slices.Concat(slicesEvs, flowEvs)},
			{"no-order", slices.Concat(slicesEvs, shuffled)},
		} {
			path := filepath.Join(dir, fmt.Sprintf("r%d-%s.json", round, v.name))
			writeEvents(t, path, v.evs)
			want := perfettoArrows(t, path)
			got, rep := build(t, 0, path)
			if rep.Unsure == 0 && len(rep.Late) == 0 {
				require.Equal(t, tracecheck.PerfettoSQL(t, path, sliceQuery)[1:], sliceKeys(got), "seed %d round %d %s: slices", seed, round, v.name)
			}
			// With InOpen (tracer sql), slices are written in the B
			// events open: the same arrows where no track is nested
			// again.
			if gotIn, repIn := buildInOpen(t, 0, true, path); repIn.LateFlows == 0 && len(repIn.Late) == 0 {
				require.Equal(t, want, arrows(gotIn), "seed %d round %d %s, InOpen", seed, round, v.name)
			}
			if rep.LateFlows > 0 {
				// Counted: they may bind elsewhere.
				require.NotContains(t, []string{"in-time", "flows-first", "mixed"}, v.name, "seed %d round %d: flow events at their time are never late", seed, round)
				continue
			}
			exact[v.name]++
			require.Equal(t, want, arrows(got), "seed %d round %d %s", seed, round, v.name)
		}
	}
	t.Logf("files of 12 without late flow events, their arrows trace_processor's: %v", exact)
	require.Equal(t, 12, exact["flows-first"])
	require.Equal(t, 12, exact["mixed"])
	require.GreaterOrEqual(t, exact["at-end"], 4, "flow events after their slices are compared")
}

// genFlowSlices returns nested X and B/E slices (only B/E if noX) on
// threads 1 to 3, at even times, and their spans (start, end, thread, 1
// for a B/E pair). With edges, a child may begin at its parent's begin
// and end at its end (then of its parent's kind: trace_processor's sort
// would take an X child before its B parent), so that several slice
// events share a ts, and slices have instants at their begin and (with
// X events) X events of no duration at their end.
func genFlowSlices(r *rand.Rand, noX, edges bool) ([]genEvent, [][4]int64) {
	var evs []genEvent
	var spans [][4]int64
	for tid := int64(1); tid <= 3; tid++ {
		var grow func(s, e int64, depth int, kind int64)
		grow = func(s, e int64, depth int, kind int64) {
			name := fmt.Sprintf("s%d", r.IntN(4))
			be := kind
			if be < 0 {
				be = 0
				if noX || r.IntN(3) == 0 {
					be = 1
				}
			}
			if be == 1 {
				evs = append(evs, genEvent{s, fmt.Sprintf(`{"name":%q,"ph":"B","ts":%d,"pid":1,"tid":%d}`, name, s, tid)})
				// After its children's, for those that end with it.
				defer func() {
					evs = append(evs, genEvent{e, fmt.Sprintf(`{"name":%q,"ph":"E","ts":%d,"pid":1,"tid":%d}`, name, e, tid)})
				}()
			} else {
				evs = append(evs, genEvent{s, fmt.Sprintf(`{"name":%q,"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d}`, name, s, e-s, tid)})
			}
			spans = append(spans, [4]int64{s, e, tid, be})
			if edges && r.IntN(5) == 0 {
				// An instant at its begin, in it.
				evs = append(evs, genEvent{s, fmt.Sprintf(`{"name":"i%d","ph":"i","ts":%d,"pid":1,"tid":%d}`, r.IntN(2), s, tid)})
			}
			if edges && !noX && r.IntN(5) == 0 {
				// An X of no duration at its end, after its children.
				defer func() {
					evs = append(evs, genEvent{e, fmt.Sprintf(`{"name":"z%d","ph":"X","ts":%d,"dur":0,"pid":1,"tid":%d}`, r.IntN(2), e, tid)})
				}()
			}
			at := s + 2
			if edges && r.IntN(3) == 0 {
				at = s
			}
			for depth < 3 && at < e-4 {
				cs := at + 2*r.Int64N(max(1, (e-at)/6))
				ce := cs + 2 + 2*r.Int64N(max(1, (e-cs)/2))
				if ce > e || ce == e && !(edges && r.IntN(2) == 0) {
					break
				}
				kind := int64(-1)
				if cs == s || ce == e {
					kind = be
				}
				grow(cs, ce, depth+1, kind)
				at = ce + 2*r.Int64N(3)
			}
		}
		for at := 2 * r.Int64N(10); at < 600; {
			end := at + 2 + 2*r.Int64N(60)
			grow(at, end, 0, -1)
			at = end + 2*r.Int64N(8)
		}
	}
	return evs, spans
}

// genFlowEvents returns flow events of ids 1 to 6, each id's in time
// order: its first an s in a slice (or, one time in five, a t or f
// before any s), then s again, t, f with "bp":"e" and, once an s is
// bound, f binding to the next slice, on any thread, in a slice or
// between, at odd times (no ties with slice events) or, one time in
// four, at the E of a B/E pair or the begin of a slice.
func genFlowEvents(r *rand.Rand, spans [][4]int64) []genEvent {
	var evs []genEvent
	for id := 1; id <= 6; id++ {
		ts := 2*r.Int64N(50) + 1
		started := false
		for k := range 2 + r.IntN(6) {
			tid := 1 + r.Int64N(3)
			ph := []string{"s", "t", "t", "f", "f", "f", "fn"}[r.IntN(7)]
			switch {
			case k == 0 && r.IntN(5) > 0:
				ph, started = "s", true
				sp := spans[r.IntN(len(spans))]
				ts, tid = sp[0]+1, sp[2] // in a slice: it binds
			case ph == "fn" && !started:
				// trace_processor draws an f bound to the next slice
				// of a flow not started from slice id 0, and goes on
				// from there: not followed (see docs/analysis.md).
				ph = "f"
			}
			if sp := spans[r.IntN(len(spans))]; k > 0 && r.IntN(4) == 0 {
				switch {
				case ph != "fn" && sp[3] == 1 && sp[1] >= ts && r.IntN(2) == 0:
					ts, tid = sp[1], sp[2] // at an E
				case sp[0] >= ts:
					ts, tid = sp[0], sp[2] // at a begin
				}
			}
			bp := ""
			switch ph {
			case "f":
				bp = `,"bp":"e"`
			case "fn":
				ph = "f"
			}
			evs = append(evs, genEvent{ts, fmt.Sprintf(`{"name":"f","cat":"c","ph":%q,"id":%d,"ts":%d,"pid":1,"tid":%d%s}`, ph, id, ts, tid, bp)})
			ts += 2*r.Int64N(40) + 1 + ts%2 // odd
		}
	}
	return evs
}

// TestFlowsDifferFromTraceProcessor holds the differences
// docs/analysis.md states, each against trace_processor's arrows: a
// file's first X written late, out of time order, after which
// trace_processor sorts the E at a flow event's ts first (the tables
// bound the flow event in file order, as they read); an f to the next
// slice of a flow no s started, which trace_processor draws from the
// slice with id 0.
func TestFlowsDifferFromTraceProcessor(t *testing.T) {
	for _, c := range []struct {
		name      string
		events    string
		got, want [][]string
	}{
		{"first X late", `[
{"name":"p","ph":"B","ts":0,"pid":1,"tid":1},
{"name":"q","ph":"B","ts":0,"pid":1,"tid":2},
{"name":"a","ph":"B","ts":10,"pid":1,"tid":1},
{"name":"fl","cat":"c","ph":"s","id":1,"ts":20,"pid":1,"tid":1},
{"name":"a","ph":"E","ts":20,"pid":1,"tid":1},
{"name":"fl","cat":"c","ph":"f","bp":"e","id":1,"ts":30,"pid":1,"tid":2},
{"name":"z","ph":"X","ts":5,"dur":1,"pid":1,"tid":9},
{"name":"q","ph":"E","ts":100,"pid":1,"tid":2},
{"name":"p","ph":"E","ts":100,"pid":1,"tid":1}
]`, [][]string{{"q", "0", "a", "10000"}}, [][]string{{"p", "0", "q", "0"}}},
		{"next slice, no start", `[
{"name":"p","ph":"X","ts":0,"dur":100,"pid":1,"tid":1},
{"name":"q","ph":"X","ts":0,"dur":100,"pid":1,"tid":2},
{"name":"fl","cat":"c","ph":"f","id":1,"ts":10,"pid":1,"tid":2},
{"name":"b","ph":"X","ts":20,"dur":5,"pid":1,"tid":2}
]`, [][]string{}, [][]string{{"p", "0", "b", "20000"}}},
	} {
		path := filepath.Join(t.TempDir(), "flows.json")
		require.NoError(t, os.WriteFile(path, []byte(c.events), 0o644))
		r, _ := build(t, 0, path)
		require.Equal(t, c.got, arrows(r), c.name)
		require.Equal(t, c.want, perfettoArrows(t, path), c.name)
	}
}

// flowCounter is a Sink that notes, at each arrow, how many flows its
// Builder keeps.
type flowCounter struct {
	rows
	b    *Builder
	most int
}

func (f *flowCounter) Flow(r *Flow) error {
	f.most = max(f.most, len(f.b.flows))
	return f.rows.Flow(r)
}

// TestWrittenFlowsBound writes flows of many ids, each s then f in
// slices of their own, then an s and an f of the first id again: the
// flows kept once written stay within maxWrittenFlows, and the first
// id's f draws its second arrow from its first s while it is kept, from
// the second s (started anew) once dropped.
func TestWrittenFlowsBound(t *testing.T) {
	defer func(n int) { maxWrittenFlows = n }(maxWrittenFlows)
	// A parent before its child on each thread: the tracks are in
	// start order, and their slices written as they end.
	evs := []string{
		`{"name":"p","ph":"X","ts":0,"dur":3,"pid":1,"tid":1}`, `{"name":"c","ph":"X","ts":1,"dur":1,"pid":1,"tid":1}`,
		`{"name":"p","ph":"X","ts":0,"dur":3,"pid":1,"tid":2}`, `{"name":"c","ph":"X","ts":1,"dur":1,"pid":1,"tid":2}`,
	}
	flow := func(id, ts int) {
		for i, ph := range []string{"s", "f"} {
			tid := 1 + i
			evs = append(evs,
				fmt.Sprintf(`{"name":"x%d","ph":"X","ts":%d,"dur":5,"pid":1,"tid":%d}`, ts, ts, tid),
				fmt.Sprintf(`{"name":"f","cat":"c","ph":%q,"bp":"e","id":%d,"ts":%d,"pid":1,"tid":%d}`, ph, id, ts+1, tid))
		}
	}
	const ids = 100
	for id := range ids {
		flow(id, 10+10*id)
	}
	flow(0, 10+10*ids) // the first id again
	path := filepath.Join(t.TempDir(), "flows.json")
	require.NoError(t, os.WriteFile(path, []byte("[\n"+strings.Join(evs, ",\n")+"\n]\n"), 0o644))
	slice := func(ts int) []string { return []string{fmt.Sprint("x", ts), fmt.Sprint(ts, "000")} }
	last := slice(10 + 10*ids)
	for _, c := range []struct {
		max  int
		from []string // the last arrow's start
	}{{1 << 17, slice(10)}, {10, last}} {
		maxWrittenFlows = c.max
		f := &flowCounter{}
		f.b = NewBuilder(f)
		require.NoError(t, f.b.Build([]string{path}, nil))
		a := arrows(&f.rows)
		require.Len(t, a, ids+1, "bound %d", c.max)
		assert.Contains(t, a, slices.Concat(c.from, last), "bound %d", c.max)
		// The flows written, the one being written and the next.
		assert.LessOrEqual(t, f.most, min(c.max, ids)+2, "bound %d: flows kept", c.max)
	}
}
