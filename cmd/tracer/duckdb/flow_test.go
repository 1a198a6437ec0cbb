package duckdb

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/internal/tracecheck"
)

// TestMergedFlowsMatchTraceProcessor merges the files of two processes
// whose spans carry the traceparents tracehttp records with tracer
// merge, which binds them with bind_id, flow_out and flow_in, and runs
// the same SQL over the flow table in trace_processor and in tracer sql:
// the same arrows, from the same client spans to the same server spans.
func TestMergedFlowsMatchTraceProcessor(t *testing.T) {
	dir := t.TempDir()
	var front, back []string
	tp := func(i int) string { return fmt.Sprintf("00-%032x-%016x-01", 0xabc0+i, 0xfeed0000+i) }
	for i := range 30 {
		ts := 100 * i
		// Written when they end, as the tracer package writes them;
		// the backend handles most requests, one of them twice.
		front = append(front, fmt.Sprintf(`{"name":"GET /api","ph":"X","ts":%d,"dur":80,"pid":1,"tid":1,"args":{"traceparent.out":%q}}`, ts, tp(i)))
		if i%5 != 4 {
			back = append(back, fmt.Sprintf(`{"name":"handle","ph":"X","ts":%d,"dur":50,"pid":2,"tid":%d,"args":{"traceparent.in":%q}}`, ts+10, 1+i%3, tp(i)))
		}
		if i == 7 {
			back = append(back, fmt.Sprintf(`{"name":"retry","ph":"X","ts":%d,"dur":5,"pid":2,"tid":9,"args":{"traceparent.in":%q}}`, ts+70, tp(i)))
		}
	}
	write := func(name string, evs []string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte("[\n"+strings.Join(evs, ",\n")+"\n]\n"), 0o644))
		return path
	}
	a, b := write("front.json", front), write("back.json", back)
	merged := filepath.Join(dir, "merged.json")
	cmd := exec.Command("go", "-C", "..", "run", ".", "merge", "-q", "-o", merged, a, b)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	const q = `SELECT o.name AS out_name, o.ts AS out_ts, i.name AS in_name, i.ts AS in_ts
FROM flow f JOIN slice o ON o.id = f.slice_out JOIN slice i ON i.id = f.slice_in ORDER BY 1, 2, 3, 4;`
	want := tracecheck.PerfettoSQL(t, merged, q)
	got := query(t, []string{merged}, q)
	require.Len(t, want, 1+24+1, "an arrow per request the backend handled, and the retry")
	require.Equal(t, want, got)
}
