package tables

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// arrows returns the flows of r by the names and times of their slices,
// sorted.
func arrows(r *rows) [][]string {
	byID := map[int64]Slice{}
	for _, s := range r.slices {
		byID[s.ID] = s
	}
	out := [][]string{}
	for _, f := range r.flows {
		o, i := byID[f.SliceOut], byID[f.SliceIn]
		out = append(out, []string{o.Name, fmt.Sprint(o.TS), i.Name, fmt.Sprint(i.TS)})
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return out
}

// missing returns how many of want's rows got lacks (want and got
// sorted).
func missing(want, got [][]string) int {
	n, j := 0, 0
	for _, w := range want {
		for j < len(got) && slices.Compare(got[j], w) < 0 {
			j++
		}
		if j < len(got) && slices.Compare(got[j], w) == 0 {
			j++
			continue
		}
		n++
	}
	return n
}

// TestLateFlows writes random threads of nested slices (X events in start
// order, B/E pairs, slices of no duration) with chains of flow events
// (s, t, f with "bp":"e", f without), twice: each flow event at its time,
// and every flow event at the end of the file, as Chromium writes them.
// The late ones bind as the timely ones do, but for at most two arrows
// per flow event Report.LateFlows counts. (TestToolsAgainstPerfetto
// compares the arrows of real Chromium traces with trace_processor's.)
func TestLateFlows(t *testing.T) {
	defer func(n int) { histMax = n }(histMax)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	if d := os.Getenv("LATE_DIR"); d != "" {
		dir = d
	}
	if s := os.Getenv("LATE_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	var recalled, late, flows int
	for round := range 60 {
		r := rand.New(rand.NewPCG(seed, uint64(round)))
		histMax = 1 << 20
		if round%5 == 4 {
			histMax = 20 // forgets as it goes
		}
		var slicesEvs []genEvent
		var spans [][2]int64 // per slice: start, end, for the flows' times
		for tid := 1; tid <= 3; tid++ {
			var grow func(s, e int64, depth int)
			grow = func(s, e int64, depth int) {
				name := fmt.Sprintf("s%d", r.IntN(6))
				if depth > 0 && e > s && r.IntN(5) == 0 {
					slicesEvs = append(slicesEvs,
						genEvent{s, fmt.Sprintf(`{"name":%q,"ph":"B","ts":%d,"pid":1,"tid":%d}`, name, s, tid)},
						genEvent{e, fmt.Sprintf(`{"name":%q,"ph":"E","ts":%d,"pid":1,"tid":%d}`, name, e, tid)})
				} else {
					slicesEvs = append(slicesEvs, genEvent{s, fmt.Sprintf(`{"name":%q,"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d}`, name, s, e-s, tid)})
				}
				spans = append(spans, [2]int64{s, e})
				for at := s + 1; depth < 4 && at < e-1; {
					cs := at + r.Int64N(max(1, (e-at)/3))
					ce := cs + r.Int64N(max(1, e-cs))
					if ce >= e {
						break
					}
					grow(cs, ce, depth+1)
					at = ce + 1 + r.Int64N(3)
				}
			}
			for at := int64(10); at < 3000; {
				end := at + r.Int64N(300)
				grow(at, end, 0)
				at = end + 1 + r.Int64N(40)
			}
		}
		flowEvs := genFlows(r, 20+r.IntN(40), func() int64 {
			if sp := spans[r.IntN(len(spans))]; r.IntN(4) > 0 {
				return sp[0] + r.Int64N(sp[1]-sp[0]+1) // in a slice, at its start or end at times
			}
			return r.Int64N(3200)
		}, "")
		// A flow chain's events in the order of their times, as a
		// producer writes them.
		slices.SortStableFunc(flowEvs, func(a, b genEvent) int { return cmp.Compare(a.ts, b.ts) })
		write := func(name string, evs []genEvent) string {
			path := filepath.Join(dir, fmt.Sprintf("r%d-%s.json", round, name))
			writeEvents(t, path, evs)
			return path
		}
		timely := slices.Concat(slicesEvs, flowEvs)
		slices.SortStableFunc(timely, func(a, b genEvent) int { return cmp.Compare(a.ts, b.ts) }) // at one time, slices first
		inTime := write("in-time", timely)
		atEnd := write("at-end", slices.Concat(slicesEvs, flowEvs))

		want, wantRep := build(t, 0, inTime)
		got, rep := build(t, 0, atEnd)
		require.Zero(t, wantRep.LateFlows, "round %d: flow events at their time are never late", round)
		w, g := arrows(want), arrows(got)
		off := max(missing(w, g), missing(g, w))
		assert.LessOrEqual(t, off, 2*int(rep.LateFlows), "seed %d round %d: %d arrows differ, %d flow events late: %s", seed, round, off, rep.LateFlows, atEnd)
		late += int(rep.LateFlows)
		flows += len(flowEvs)
		recalled += len(flowEvs) - int(rep.LateFlows)
	}
	t.Logf("%d flow events, %d late ones bound as in time, %d counted", flows, recalled, late)
	assert.Greater(t, recalled, 2*late, "most late flow events bind from what the tracks remember")
}

// TestHalveKeepsNewerHalf remembers random trees of slices on a track,
// and checks that after halve every time from the first root kept
// recalls what it recalled before, and a time before it either the same
// or nothing bound.
func TestHalveKeepsNewerHalf(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		b := NewBuilder(&rows{})
		tr := newTrack(1)
		tr.thread = true
		var id int64
		var grow func(s, e int64, depth int) *node
		grow = func(s, e int64, depth int) *node {
			id++
			n := &node{end: e, be: r.IntN(4) == 0, row: Slice{ID: id, TS: s}}
			for at := s + 1; depth < 4 && at < e-1; {
				cs := at + r.Int64N(max(1, (e-at)/3))
				ce := cs + r.Int64N(max(1, e-cs))
				if ce >= e {
					break
				}
				n.children = append(n.children, grow(cs, ce, depth+1))
				at = ce + 1
			}
			return n
		}
		at := int64(0)
		for range 2 + r.IntN(20) {
			end := at + r.Int64N(100)
			b.remember(tr, grow(at, end, 0))
			at = end + 1 + r.Int64N(10)
		}
		type got struct {
			s sliceRef
			r recalled
		}
		before := map[int64]got{}
		for ts := int64(0); ts <= at; ts++ {
			s, rc := tr.recall(ts, ts%2 == 0)
			before[ts] = got{s, rc}
		}
		k := len(tr.histRoots) / 2
		from := tr.hist[tr.histRoots[k]].start // the first root kept
		tr.halve()
		for ts := int64(0); ts <= at; ts++ {
			s, rc := tr.recall(ts, ts%2 == 0)
			if ts >= from || k == 0 {
				require.Equal(t, before[ts], got{s, rc}, "round %d, ts %d", round, ts)
			} else if rc == bound {
				require.Equal(t, before[ts], got{s, rc}, "round %d, ts %d: a time forgotten recalls nothing or the same", round, ts)
			}
		}
	}
}

// TestHalveBound remembers one tree larger than histMax, then more
// roots: what is remembered stays within histMax.
func TestHalveBound(t *testing.T) {
	defer func(n int) { histMax = n }(histMax)
	histMax = 100
	b := NewBuilder(&rows{})
	tr := newTrack(1)
	tr.thread = true
	big := &node{end: 1000, row: Slice{ID: 1, TS: 0}}
	for i := range 150 {
		big.children = append(big.children, &node{end: int64(i*2 + 2), row: Slice{ID: int64(i + 2), TS: int64(i*2 + 1)}})
	}
	b.remember(tr, big)
	require.LessOrEqual(t, b.histLen, histMax, "one root larger than the bound")
	for i := range 10 {
		b.remember(tr, &node{end: int64(2000 + 10*i + 5), row: Slice{ID: int64(200 + i), TS: int64(2000 + 10*i)}})
		require.LessOrEqual(t, b.histLen, histMax)
		require.Equal(t, len(tr.hist), b.histLen)
	}
	s, r := tr.recall(2092, false)
	require.Equal(t, bound, r)
	require.Equal(t, sliceRef{209, 2090}, s)
}
