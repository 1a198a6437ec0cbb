package trace

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/require"
)

// keepTrace returns B/E events of two threads, the first with an E at
// the ts of the B before it, then an X, and an X out of order, which
// makes Perfetto's sorter take that E first: the first thread is
// replayed. The second thread's names hold ids (past groupAfter, they
// are grouped as they are kept).
func keepTrace() string {
	var b strings.Builder
	b.WriteString("[\n")
	b.WriteString(`{"name":"outer","ph":"B","ts":1,"pid":1,"tid":1},{"name":"inner","ph":"B","ts":5,"pid":1,"tid":1},{"name":"outer","ph":"E","ts":5,"pid":1,"tid":1},{"name":"inner","ph":"E","ts":9,"pid":1,"tid":1},` + "\n")
	for i := range groupAfter + 100 {
		fmt.Fprintf(&b, `{"name":"req %d","ph":"B","ts":%d,"pid":1,"tid":2},{"name":"step","ph":"B","ts":%d,"pid":1,"tid":2},{"name":"step","ph":"E","ts":%d,"pid":1,"tid":2},{"name":"req %d","ph":"E","ts":%d,"pid":1,"tid":2},`+"\n", i, 10*i, 10*i+1, 10*i+3, i, 10*i+7)
	}
	b.WriteString(x("x", 200_000, 5) + x("x", 2, 1))
	b.WriteString(`{"name":"s","ph":"i","s":"g","ts":3,"pid":1,"tid":3}` + "\n]\n")
	return b.String()
}

// follow runs an Analyzer over text, keeping tracks if keep.
func follow(t *testing.T, text string, keep bool) *Analyzer {
	t.Helper()
	r := tracefile.NewReader(strings.NewReader(text))
	a := NewAnalyzer()
	a.Stats, a.Keep = true, keep
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		a.Add(ev)
	}
	return a
}

// finish ends a's reading as stats does, replaying the tracks in exact
// from what a kept, and returns each name's numbers: count, total, self,
// max, deepest depth, median and 99th percentile.
func finish(a *Analyzer, exact TrackSet) map[string][7]int64 {
	if exact != nil {
		a.ReplayKept(exact)
		a.FinishExact(a.MaxTS)
	}
	a.EndOpen(a.MaxTS)
	a.Finish(false)
	m := map[string][7]int64{}
	for _, n := range a.Names {
		m[n.Name] = [7]int64{n.Count, n.Total, n.Self, n.Max, int64(n.MaxDepth), n.Durations.Quantile(0.5), n.Durations.Quantile(0.99)}
	}
	return m
}

// TestKeepBound requires a track tangled by a tie before the file's
// first X to be kept whole within keepMax and keepTracksMax, and past
// either dropped, with the numbers of every track kept so far counted as
// if none was kept.
func TestKeepBound(t *testing.T) {
	text := keepTrace()
	plain := follow(t, text, false)
	tangled := plain.Tangled()
	require.Len(t, tangled, 1, "the first thread's tie is sorted")
	want := finish(plain, nil)

	for _, tc := range []struct {
		max, tracks int
		kept        bool
	}{
		{1 << 20, 4096, true},
		{1 << 20, 2, true},
		{100, 4096, false},   // past the bound before the second thread's names are grouped
		{30000, 4096, false}, // past it after
		{1 << 20, 1, false},  // past the bound of tracks at the second
	} {
		t.Run(fmt.Sprint(tc.max, "/", tc.tracks), func(t *testing.T) {
			defer func(m, n int) { keepMax, keepTracksMax = m, n }(keepMax, keepTracksMax)
			keepMax, keepTracksMax = tc.max, tc.tracks
			a := follow(t, text, true)
			require.Equal(t, tangled, a.Tangled())
			require.Equal(t, tc.kept, a.Kept(tangled))
			if !tc.kept {
				require.Equal(t, want, finish(a, nil), "numbers as if nothing was kept")
				require.Zero(t, a.kept)
				return
			}
			got := finish(a, tangled)
			require.Zero(t, a.kept)
			// The replay differs from the stream on the first thread
			// only: outer's E is taken before inner's B, so inner lasts
			// to its E rather than being cut where outer ends.
			require.Equal(t, want["req <n>"], got["req <n>"])
			require.Equal(t, want["step"], got["step"])
			require.Equal(t, int64(0), want["inner"][1])
			require.Equal(t, int64(4000), got["inner"][1])
		})
	}
}
