package tables

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
)

// toolsPerName asks trace_processor, per slice name (every track), the
// count, total duration (of the slices that ended), self time and
// deepest depth.
const toolsPerName = `select s.name as name, count(*) as n, sum(case when s.dur >= 0 then s.dur else 0 end) as total,
  sum(case when s.dur >= 0 then s.dur - coalesce((select sum(c.dur) from slice c where c.parent_id = s.id and c.dur >= 0), 0) else 0 end) as self,
  max(s.depth) as depth
from slice s group by s.name;`

// toolsTotals asks trace_processor for the threads, flows and counter
// values (their count and sum).
const toolsTotals = `select (select count(*) from thread where tid is not null and utid != 0) as threads,
  (select count(*) from flow) as flows,
  (select count(*) from counter) as counters,
  (select cast(coalesce(sum(value), 0) as int) from counter) as counter_sum;`

// perName sums the rows as toolsPerName does.
func perName(r *rows) map[string]string {
	kids := map[int64]int64{}
	for _, s := range r.slices {
		if s.ParentID != nil && s.Dur >= 0 {
			kids[*s.ParentID] += s.Dur
		}
	}
	type sums struct{ n, total, self, depth int64 }
	m := map[string]*sums{}
	for _, s := range r.slices {
		x := m[s.Name]
		if x == nil {
			x = &sums{depth: -1}
			m[s.Name] = x
		}
		x.n++
		if s.Dur >= 0 {
			x.total += s.Dur
			x.self += s.Dur - kids[s.ID]
		}
		x.depth = max(x.depth, int64(s.Depth))
	}
	out := map[string]string{}
	for name, x := range m {
		out[name] = fmt.Sprintf("n=%d total=%d self=%d depth=%d", x.n, x.total, x.self, x.depth)
	}
	return out
}

// knownDifference reports whether the numbers of a name, as
// trace_processor (want) and the tables (have) give them, differ only as
// docs/analysis.md says they may, on the file base:
//
//   - go-build: timestamps in microseconds since 1970, which
//     trace_processor holds as a double of ns, rounding them to 256 ns;
//     the tables keep the file's ns: the totals differ by less than
//     512 ns a slice, the counts and depths not at all.
//   - webpack-small: an X without dur, which trace_processor drops,
//     still makes its sorter take an E before a B of one ts, and cut B/E
//     pairs (misplaced_end_event); the tables nest B/E pairs in file
//     order: the durations, self time and depth of the slices cut
//     differ, the counts not.
func knownDifference(base, want, have string) bool {
	var wn, wt, ws, wd, hn, ht, hs, hd int64
	fmt.Sscanf(want, "n=%d total=%d self=%d depth=%d", &wn, &wt, &ws, &wd)
	fmt.Sscanf(have, "n=%d total=%d self=%d depth=%d", &hn, &ht, &hs, &hd)
	switch base {
	case "go-build":
		return wn == hn && wd == hd && abs(wt-ht) < 512*wn && abs(ws-hs) < 1024*wn
	case "webpack-small":
		return wn == hn
	}
	return false
}

func abs(n int64) int64 { return max(n, -n) }

// TestToolsAgainstPerfetto builds the tables of every trace of the corpus
// of real tools' traces, and of a copy cut at a random byte, and compares
// them with trace_processor's: per slice name, the count, total, self
// time and deepest depth; the threads, flows and counters.
func TestToolsAgainstPerfetto(t *testing.T) {
	for _, tt := range toolTraces(t, t.TempDir()) {
		base, path := tt.base, tt.path
		t.Run(tt.name, func(t *testing.T) {
			got, rep := build(t, 0, path)
			want := map[string]string{}
			for _, row := range tracecheck.Query(t, path, toolsPerName) {
				want[row["name"]] = fmt.Sprintf("n=%s total=%s self=%s depth=%s", row["n"], row["total"], row["self"], row["depth"])
			}
			have := perName(got)
			var diff []string
			for name, w := range want {
				if h := have[name]; h != w && !knownDifference(base, w, h) {
					diff = append(diff, fmt.Sprintf("%q: trace_processor %s, tables %s", name, w, h))
				}
			}
			for name, h := range have {
				if _, ok := want[name]; !ok {
					diff = append(diff, fmt.Sprintf("%q: trace_processor none, tables %s", name, h))
				}
			}
			slices.Sort(diff)
			assert.Empty(t, diff, "per name:\n%s", strings.Join(diff, "\n"))
			totals := tracecheck.Query(t, path, toolsTotals)[0]
			sum := 0.0
			for _, c := range got.counters {
				sum += c.Value
			}
			assert.Equal(t, totals["threads"], fmt.Sprint(len(got.threads)), "threads")
			assert.Equal(t, totals["flows"], fmt.Sprint(len(got.flows)), "flows")
			assert.Equal(t, totals["counters"], fmt.Sprint(len(got.counters)), "counters")
			assert.Equal(t, totals["counter_sum"], fmt.Sprint(int64(sum)), "counter values")
			// The arrows, by their slices' names and times. Chromium
			// writes its flow events after the slices of their time:
			// they bind from what the tracks remember (late.go), every
			// one of them here.
			assert.Equal(t, perfettoArrows(t, path), arrows(got), "arrows")
			assert.Zero(t, rep.LateFlows, "flow events whose slices were written, and which the history could not bind")
		})
	}
}
