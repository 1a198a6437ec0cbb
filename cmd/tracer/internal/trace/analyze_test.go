package trace

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// analyze runs an Analyzer over the events in text.
func analyze(t *testing.T, text string) (*Analyzer, []tracefile.Problem) {
	t.Helper()
	var problems []tracefile.Problem
	r := tracefile.NewReader(strings.NewReader(text))
	a := NewAnalyzer()
	a.Stats = true
	r.OnProblem = func(p tracefile.Problem) { problems = append(problems, p) }
	a.OnProblem = r.OnProblem
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		a.Add(ev)
	}
	a.Finish(false)
	return a, problems
}

func x(name string, ts, dur int) string {
	return `{"name":"` + name + `","ph":"X","ts":` + itoa(ts) + `,"dur":` + itoa(dur) + `,"pid":1,"tid":1},` + "\n"
}

func itoa(n int) string { return strconv.Itoa(n) }

func names(a *Analyzer) map[string]NameStats {
	m := map[string]NameStats{}
	for _, n := range a.Names {
		m[n.Name] = *n
	}
	return m
}

// TestSelfAndBusy computes self and busy time of one tree of slices
// written in the three orders a file may hold: by end (the tracer
// package), by start (other producers) and as B/E pairs.
func TestSelfAndBusy(t *testing.T) {
	// root [0,100] { a [10,40] { a1 [15,20] }, b [50,90] }, then c [200,210]
	orders := map[string]string{
		"end":   "[\n" + x("a1", 15, 5) + x("a", 10, 30) + x("b", 50, 40) + x("root", 0, 100) + x("c", 200, 10),
		"start": "[\n" + x("root", 0, 100) + x("a", 10, 30) + x("a1", 15, 5) + x("b", 50, 40) + x("c", 200, 10),
		"BE": "[\n" + `{"name":"root","ph":"B","ts":0,"pid":1,"tid":1},` + "\n" + x("a1", 15, 5) + x("a", 10, 30) +
			`{"name":"b","ph":"B","ts":50,"pid":1,"tid":1},{"name":"b","ph":"E","ts":90,"pid":1,"tid":1},` + "\n" +
			`{"name":"root","ph":"E","ts":100,"pid":1,"tid":1},` + "\n" + x("c", 200, 10),
	}
	for name, text := range orders {
		t.Run(name, func(t *testing.T) {
			a, problems := analyze(t, text)
			require.Empty(t, problems)
			n := names(a)
			assert.Equal(t, int64(100_000-30_000-40_000), n["root"].Self)
			assert.Equal(t, int64(25_000), n["a"].Self)
			assert.Equal(t, int64(5_000), n["a1"].Self)
			assert.Equal(t, int64(40_000), n["b"].Self)
			assert.Equal(t, int64(100_000), n["root"].Total)
			tracks := a.Tracks()
			require.Len(t, tracks, 1)
			assert.Equal(t, int64(110_000), tracks[0].Busy)
			assert.Equal(t, int64(5), tracks[0].Slices)
		})
	}
}

func TestOverlap(t *testing.T) {
	for name, text := range map[string]string{
		"end":         "[\n" + x("a", 0, 10) + x("b", 5, 10),
		"start":       "[\n" + x("a", 0, 10) + x("b", 5, 10),
		"child first": "[\n" + x("c", 20, 10) + x("p", 0, 25),
	} {
		t.Run(name, func(t *testing.T) {
			_, problems := analyze(t, text)
			require.Len(t, problems, 1)
			assert.Equal(t, KindOverlap, problems[0].Kind)
			assert.Equal(t, 3, problems[0].Line, "the second event's line")
		})
	}
}

// TestFold checks that a track holding more top-level slices than it
// keeps apart still gets self and busy time right when a slice, here the
// E of a B, encloses them all; and that it keeps them apart up to maxTop.
func TestFold(t *testing.T) {
	var b strings.Builder
	b.WriteString("[\n" + `{"name":"before","ph":"X","ts":0,"dur":5,"pid":1,"tid":1},` + "\n")
	b.WriteString(`{"name":"life","ph":"B","ts":5,"pid":1,"tid":1},` + "\n")
	const n = 3*maxStack + 7
	for i := range n {
		b.WriteString(x("job", 10+3*i, 2))
	}
	b.WriteString(`{"name":"life","ph":"E","ts":` + itoa(20+3*n) + `,"pid":1,"tid":1},` + "\n")
	for name, top := range map[string]int{"kept apart": maxTop, "folded": maxStack} {
		t.Run(name, func(t *testing.T) {
			defer func(n int) { maxTop = n }(maxTop)
			maxTop = top
			a, problems := analyze(t, b.String())
			require.Empty(t, problems)
			names := names(a)
			assert.Equal(t, int64(n*2000), names["job"].Self)
			assert.Equal(t, int64((15+3*n)*1000-n*2000), names["life"].Self)
			assert.Equal(t, int64((20+3*n)*1000), a.Tracks()[0].Busy)
			assert.LessOrEqual(t, len(a.trackList[0].stack), top)
		})
	}
}

// TestFlowsOfACrash checks that in a file cut short, a flow event after
// the last slice of its track is not reported: the span around it was
// TestFlowsAsTheViewersBind: chrome://tracing binds a flow event to a
// slice of its thread around its ts, ends included; Perfetto to the top
// of the thread's slice stack, which holds a slice that ended until
// another slice event of the thread comes, and takes an E before the
// other events of its ts (which only a replay of the track tells).
func TestFlowsAsTheViewersBind(t *testing.T) {
	text := "[\n" + x("a", 0, 10) +
		`{"name":"f","ph":"s","ts":5,"pid":1,"tid":1,"id":1},` + "\n" + // in a
		`{"name":"f","ph":"s","ts":20,"pid":1,"tid":1,"id":2},` + "\n" + // after a, which Perfetto's stack still holds
		`{"name":"f","ph":"s","ts":30,"pid":1,"tid":1,"id":3},` + "\n" + x("b", 25, 2) + // after b, likewise
		`{"name":"g","ph":"B","ts":40,"pid":1,"tid":1},` + "\n" +
		`{"name":"g","ph":"E","ts":50,"pid":1,"tid":1},` + "\n" +
		`{"name":"f","ph":"s","ts":50,"pid":1,"tid":1,"id":4}` + "\n]" // at g's end: popped by the E first
	read := func(a *Analyzer) {
		r := tracefile.NewReader(strings.NewReader(text))
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			a.Add(ev)
		}
	}
	var problems []tracefile.Problem
	a := NewAnalyzer()
	a.OnProblem = func(p tracefile.Problem) { problems = append(problems, p) }
	read(a)
	tracks := a.FlowTracks()
	require.NotNil(t, tracks, "the flow at g's end needs a replay")
	b := NewAnalyzer()
	b.Exact = tracks
	read(b)
	b.FinishExact(b.MaxTS)
	a.PerfettoFlows(b)
	a.Finish(false)
	type verdict struct {
		line               int
		perfetto, catapult string
	}
	var got []verdict
	for _, p := range problems {
		assert.Equal(t, KindFlow, p.Kind)
		got = append(got, verdict{p.Line, p.Perfetto, p.Catapult})
	}
	assert.Equal(t, []verdict{
		{4, "", "flow_slice_start_error"},
		{5, "", "flow_slice_start_error"},
		{9, "flow_no_enclosing_slice", ""},
	}, got)
}

// TestNestingRandom checks the nesting logic on random trees of slices,
// written in end order and in start order (no problem, and self and busy
// time as worked out from the tree), and on random slices in random order
// (every overlap reported is one).
func TestNestingRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type iv struct{ s, e int }
	for round := range 200 {
		// A random tree: children split their parent's time.
		var tree []iv
		self := map[int]int{}
		var grow func(s, e, depth int)
		grow = func(s, e, depth int) {
			i := len(tree)
			tree = append(tree, iv{s, e})
			self[i] = e - s
			for at := s; depth < 4 && at < e-2; {
				cs := at + rng.IntN(max(1, (e-at)/2))
				ce := cs + 1 + rng.IntN(max(1, e-cs-1))
				if ce > e || cs >= ce {
					break
				}
				self[i] -= ce - cs
				grow(cs, ce, depth+1)
				at = ce
			}
		}
		busy := 0
		for at := 0; at < 1000; at += 1 + rng.IntN(50) {
			e := at + 1 + rng.IntN(100)
			grow(at, e, 0)
			busy += e - at
			at = e
		}
		for _, order := range []string{"end", "start"} {
			idx := make([]int, len(tree))
			for i := range idx {
				idx[i] = i
			}
			slices.SortStableFunc(idx, func(a, b int) int {
				x, y := tree[a], tree[b]
				if order == "end" {
					return cmp.Or(cmp.Compare(x.e, y.e), cmp.Compare(y.s, x.s))
				}
				return cmp.Or(cmp.Compare(x.s, y.s), cmp.Compare(y.e, x.e))
			})
			var b strings.Builder
			b.WriteString("[\n")
			for _, i := range idx {
				b.WriteString(x("n"+strconv.Itoa(i), tree[i].s, tree[i].e-tree[i].s))
			}
			a, problems := analyze(t, b.String())
			require.Empty(t, problems, "round %d, %s order", round, order)
			got := names(a)
			for i := range tree {
				require.Equal(t, int64(self[i])*1000, got["n"+strconv.Itoa(i)].Self, "round %d, %s order, slice %d", round, order, i)
			}
			require.Equal(t, int64(busy)*1000, a.Tracks()[0].Busy, "round %d, %s order", round, order)
		}

		// Random slices in random order: what is reported is true.
		var ivs []iv
		var b strings.Builder
		b.WriteString("[\n")
		for i := range 30 {
			s := rng.IntN(100)
			ivs = append(ivs, iv{s, s + 1 + rng.IntN(30)})
			b.WriteString(x("r"+strconv.Itoa(i), ivs[i].s, ivs[i].e-ivs[i].s))
		}
		_, problems := analyze(t, b.String())
		for _, p := range problems {
			require.Equal(t, KindOverlap, p.Kind)
			i := p.Line - 2
			var other int
			_, err := fmt.Sscanf(p.Msg[strings.Index(p.Msg, "(line ")+len("(line "):], "%d", &other)
			require.NoError(t, err)
			u, v := ivs[i], ivs[other-2]
			partial := u.s < v.s && v.s < u.e && u.e < v.e || v.s < u.s && u.s < v.e && v.e < u.e
			require.True(t, partial, "round %d: %v and %v reported: %s", round, u, v, p.Msg)
		}
	}
}

// TestDeepNestingLinear nests slices tens of thousands of levels deep in
// start order (X events, and B/E pairs) and counts the work on the tree
// beyond one step per slice: the folds that cannot shrink a chain, and
// the heights raised along it. It grows with the slices, not with their
// square (it was 8.5 steps a slice at 5,000 levels and 38 at 20,000).
func TestDeepNestingLinear(t *testing.T) {
	for _, n := range []int{5000, 20000} {
		for _, be := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/be=%v", n, be), func(t *testing.T) {
				var b strings.Builder
				b.WriteString("[\n")
				for i := range n {
					if be {
						fmt.Fprintf(&b, `{"name":"r","ph":"B","ts":%d,"pid":1,"tid":1},`+"\n", i)
					} else {
						b.WriteString(x("r", i, 2*(n-i)))
					}
				}
				for i := range n {
					if be {
						fmt.Fprintf(&b, `{"name":"r","ph":"E","ts":%d,"pid":1,"tid":1},`+"\n", n+i)
					}
				}
				a, _ := analyze(t, b.String())
				assert.Equal(t, int64(n), names(a)["r"].Count)
				perSlice := float64(a.steps) / float64(n)
				t.Logf("%.2f steps a slice", perSlice)
				assert.Less(t, perSlice, 4.0)
			})
		}
	}
}
